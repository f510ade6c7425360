#!/usr/bin/env python3
# Plays a dock on a session bus: owns com.canonical.Unity (libunity sends its
# launcher entries only while a launcher owns that name) and prints one JSON
# line per com.canonical.Unity.LauncherEntry.Update signal: the app URI, the
# properties sent, and the uid and pid of the connection that sent it (asked
# of the bus; null when the sender was already gone). The first line is
# {"owned": true} once the name is owned.
import json
import sys

from gi.repository import Gio, GLib

bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)


def ask(method, sender, sig):
    try:
        reply = bus.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method,
                              GLib.Variant("(s)", (sender,)), GLib.VariantType(sig), Gio.DBusCallFlags.NONE, 1000,
                              None)
        return reply.unpack()[0]
    except GLib.Error:
        return None


def on_update(conn, sender, path, iface, name, params):
    app_uri, props = params.unpack()
    print(json.dumps({"app_uri": app_uri, "props": props, "uid": ask("GetConnectionUnixUser", sender, "(u)"),
                      "pid": ask("GetConnectionUnixProcessID", sender, "(u)")}), flush=True)


def on_owned(conn, name):
    print(json.dumps({"owned": True}), flush=True)


bus.signal_subscribe(None, "com.canonical.Unity.LauncherEntry", "Update", None, None, Gio.DBusSignalFlags.NONE,
                     on_update)
Gio.bus_own_name_on_connection(bus, "com.canonical.Unity", Gio.BusNameOwnerFlags.NONE, on_owned, None)
GLib.MainLoop().run()

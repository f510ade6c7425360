#!/usr/bin/env bash
# Builds the .NET programs under tests/apps/ into OUT (default build/apps) with
# the machine's dotnet SDK.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/build/apps}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
if ! command -v dotnet >/dev/null; then
	echo "build-apps: the .NET SDK (dotnet) is not on PATH; install the .NET SDK 8 or newer" >&2
	exit 1
fi
for proj in "$here"/tests/apps/*/*.csproj; do
	name=$(basename "$proj" .csproj)
	dotnet build "$proj" -c Release -o "$out/$name" --nologo -v quiet -p:UseAppHost=true \
		-p:BaseIntermediateOutputPath="$out/obj/$name/" >"$out.$name.log" 2>&1 ||
		{ cat "$out.$name.log" >&2; echo "build-apps: building $name failed" >&2; exit 1; }
done
echo "build-apps: built $(ls "$here"/tests/apps/*/*.csproj | wc -l) app(s) into $out"

# The dump checker (tests/tools/DumpCheck, ClrMD) the integration tests read
# dumps with: one build beside the apps' directories, whatever runtime the apps
# are built for (lib.sh finds it as DW_DUMPCHECK, default BUILD/tools/DumpCheck).
tools=$(dirname "$out")/tools
mkdir -p "$tools"
dotnet build "$here/tests/tools/DumpCheck/DumpCheck.csproj" -c Release -o "$tools/DumpCheck" --nologo -v quiet \
	-p:UseAppHost=true -p:BaseIntermediateOutputPath="$tools/obj/DumpCheck/" >"$tools/DumpCheck.log" 2>&1 ||
	{ cat "$tools/DumpCheck.log" >&2; echo "build-apps: building DumpCheck failed" >&2; exit 1; }
echo "build-apps: built DumpCheck into $tools/DumpCheck"

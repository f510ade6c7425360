#!/usr/bin/env bash
# Builds the .NET programs under tests/apps/ with the machine's dotnet SDK:
#   OUT/NAME/NAME        (default OUT = build/apps) net10.0, framework-dependent:
#                        runs on the host's .NET 10 runtime
#   OUT-net8/NAME/NAME   net8.0, self-contained: carries its own .NET 8 runtime
#   OUT-net9/NAME/NAME   net9.0, self-contained: carries its own .NET 9 runtime
# The self-contained builds fetch the runtime packs from the NuGet feed (the
# web service ShopApi also ASP.NET Core's, Microsoft.AspNetCore.App.Runtime),
# so the tests cover runtimes the host has not installed. DW_APP_RUNTIMES (default
# "10 8 9") chooses which are built, DW_APPS (default: every app under
# tests/apps, and the dump checker tests/tools/DumpCheck) which programs. A
# build newer than its app's sources, its project and this script is kept,
# not built again.
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

# fresh EXE SRCDIR: EXE exists and is newer than every file of the app's
# sources and this script.
fresh() {
	[ -x "$1" ] || return 1
	[ -z "$(find "$2" "$here/scripts/build-apps.sh" \( -name bin -o -name obj \) -prune -o -type f -newer "$1" -print -quit)" ]
}

# runtime_of DIR: the Microsoft.NETCore.App version a build runs on: the one it
# carries (self-contained), else the newest the host has of its major version.
runtime_of() {
	local cfg=$1/$(basename "$1").runtimeconfig.json v major
	v=$(tr -d ' \n' <"$cfg" | sed -n 's/.*"includedFrameworks":\[{"name":"Microsoft.NETCore.App","version":"\([^"]*\)".*/\1/p')
	if [ -n "$v" ]; then
		echo "$v (self-contained)"
		return
	fi
	major=$(tr -d ' \n' <"$cfg" | sed -n 's/.*"name":"Microsoft.NETCore.App","version":"\([0-9]*\)\..*/\1/p')
	v=$(dotnet --list-runtimes | awk -v m="$major." '$1 == "Microsoft.NETCore.App" && index($2, m) == 1 { v = $2 } END { print v }')
	echo "${v:-none installed} (the host's)"
}

built=0
for rt in ${DW_APP_RUNTIMES:-10 8 9}; do
	case "$rt" in
	10) dir=$out ;;
	8 | 9) dir=$out-net$rt ;;
	*) echo "build-apps: DW_APP_RUNTIMES: unknown runtime '$rt' (10, 8 or 9)" >&2; exit 1 ;;
	esac
	for proj in "$here"/tests/apps/*/*.csproj; do
		name=$(basename "$proj" .csproj)
		[ -z "${DW_APPS:-}" ] || [[ " $DW_APPS " == *" $name "* ]] || continue
		log=$dir.$name.log
		if fresh "$dir/$name/$name" "$(dirname "$proj")"; then
			echo "build-apps: $name for .NET $rt is up to date in $dir/$name, runtime $(runtime_of "$dir/$name")"
			continue
		fi
		start=$SECONDS
		if [ "$rt" = 10 ]; then
			dotnet build "$proj" -c Release -o "$dir/$name" --nologo -v quiet -p:UseAppHost=true \
				-p:BaseIntermediateOutputPath="$dir/obj/$name/" >"$log" 2>&1
		else
			# TargetFrameworks, not TargetFramework: restore ignores a
			# TargetFramework given on the command line. Intermediate and
			# build outputs of each runtime in their own directories.
			rm -rf "${dir:?}/$name"
			dotnet publish "$proj" -c Release -r linux-x64 --self-contained -f "net$rt.0" \
				-p:TargetFrameworks="net$rt.0" -o "$dir/$name" --nologo -v quiet -p:UseAppHost=true \
				-p:BaseIntermediateOutputPath="$dir/obj/$name/" -p:BaseOutputPath="$dir/bin/$name/" \
				>"$log" 2>&1
		fi || { cat "$log" >&2; echo "build-apps: building $name for .NET $rt failed" >&2; exit 1; }
		# The publish copied everything from bin/: only obj/ is worth keeping.
		rm -rf "${dir:?}/bin/$name"
		touch "$dir/$name/$name"
		built=$((built + 1))
		echo "build-apps: built $name for .NET $rt into $dir/$name in $((SECONDS - start)) s, runtime $(runtime_of "$dir/$name")"
	done
done
echo "build-apps: $built build(s) made, the others were up to date"

# The dump checker (tests/tools/DumpCheck, ClrMD) the integration tests read
# dumps with: one build beside the apps' directories, whatever runtime the apps
# are built for (lib.sh finds it as DW_DUMPCHECK, default BUILD/tools/DumpCheck).
tools=$(dirname "$out")/tools
mkdir -p "$tools"
if [ -n "${DW_APPS:-}" ] && [[ " $DW_APPS " != *" DumpCheck "* ]]; then
	:
elif fresh "$tools/DumpCheck/DumpCheck" "$here/tests/tools/DumpCheck"; then
	echo "build-apps: DumpCheck is up to date in $tools/DumpCheck"
else
	dotnet build "$here/tests/tools/DumpCheck/DumpCheck.csproj" -c Release -o "$tools/DumpCheck" --nologo -v quiet \
		-p:UseAppHost=true -p:BaseIntermediateOutputPath="$tools/obj/DumpCheck/" >"$tools/DumpCheck.log" 2>&1 ||
		{ cat "$tools/DumpCheck.log" >&2; echo "build-apps: building DumpCheck failed" >&2; exit 1; }
	touch "$tools/DumpCheck/DumpCheck"
	echo "build-apps: built DumpCheck into $tools/DumpCheck"
fi

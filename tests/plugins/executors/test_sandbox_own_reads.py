"""What a sandboxed program may read of its own and its installation's, on every
zygote executor (subprocess, firejail, bubblewrap) under Landlock: its own /proc entries
(threadpoolctl lists the loaded libraries from /proc/self/maps; psutil reads status, stat,
statm), the machine's counters (/proc/stat: psutil.cpu_percent; /proc/loadavg) and the data
its interpreter's installation keeps under ``sys.prefix/share`` (xyzservices opens
``share/xyzservices/providers.json`` at import); still nothing of another process (/proc/1,
the forker's entries), of another job, of the benchmark data, nor the rest of the prefix,
whether named directly or through its own /proc/self/root and cwd links."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
from codea1_testkit import run_code

from codea1.harness.records import PASS
from codea1.harness.sandbox import confine

EXECUTORS = [("subprocess", None), ("firejail", "firejail"), ("bubblewrap", "bwrap")]
SHARED_DATA = Path(os.environ.get("CODEA1_SHARED_DATA", Path(__file__).resolve().parents[3].parent / "shared" / "data"))
BENCHMARK_FILE = SHARED_DATA / "bigcodebench" / "BigCodeBench-v0.1.0.jsonl.gz"

pytestmark = pytest.mark.skipif(not confine.probe_landlock(),
                                reason="this kernel has no Landlock: reads are not confined")

# Run by the throwaway environment's interpreter: one job on a fresh executor, its value and
# what the executor says of /proc.
DRIVER = """
import json, sys
from codea1.harness.verdicts.asserts import parse_asserts
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.plugin_manager import load_plugins
from codea1.harness.records import ExecJob

spec = json.loads(sys.argv[1])
with load_plugins(autoload=False).executors.create(spec["executor"], {}, workers=1) as executor:
    info = executor.info()
    tests, _ = parse_asserts("assert f(0) == 0", "f", allow_other_forms=True)
    job = ExecJob(job_id="t", code=spec["code"], tests=tests, entry_point="f", time_limits=[30.0], batch_timeout=60.0,
                  memory_mb=1024)
    raw = run_jobs(executor, [job])["t"]
value = raw.outcomes[0].value if raw.outcomes and raw.outcomes[0].status == "ok" else None
print(json.dumps({"value": value, "raw": repr(raw)[-2000:], "proc": info["reads"]["proc"],
                  "landlock": info["landlock"] != "none", "harness": sys.modules["codea1.harness"].__file__}))
"""

# What the program reads: its own /proc entries as threadpoolctl and psutil do, its
# installation's data file as xyzservices does, and (each must be refused) the paths of REFUSED.
LOOK = r'''
import os, re, sys

def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None

def f(x):
    maps = _read("/proc/self/maps") or b""
    libraries = set(re.findall(rb" (/[^\n]+\.so[^\n^/]*)\n", maps))  # threadpoolctl's pattern
    status = _read("/proc/self/status") or b""
    statm = _read(f"/proc/{os.getpid()}/statm") or b""
    data = _read(os.path.join(sys.prefix, "share", "codea1-own-reads", "providers.json"))
    try:
        machine = (_read("/proc/stat") or b"").startswith(b"cpu ") and len(os.getloadavg()) == 3  # psutil.cpu_percent
    except OSError:
        machine = False
    parent = os.getppid()
    refused = [*REFUSED, "/proc/1/environ", "/proc/1/cmdline", f"/proc/{parent}/status", f"/proc/{parent}/cmdline",
               f"/proc/{parent}/environ", f"/proc/{parent}/maps"]
    for path in REFUSED:  # the same paths through the program's own /proc links
        refused += ["/proc/self/root" + path, "/proc/self/cwd/" + "../" * 30 + path.lstrip("/")]
    return {"libraries": any(b"python" in p or b"libc" in p for p in libraries),
            "status": status.startswith(b"Name:") and b"\nPid:" in status, "statm": len(statm.split()) == 7,
            "machine": machine,
            "data": data and data.decode(),
            "read": sorted(p for p in refused if _read(p) is not None)}
'''


def throwaway_environment(base: Path) -> tuple[str, dict, Path]:
    """A virtual environment in ``base`` (no pip) whose share/ holds a package's data file
    (``codea1-own-reads/providers.json``) and whose prefix a file that is no package data; it
    finds codea1 and the dependencies where this interpreter does, through a .pth file.
    Returns its interpreter, the environment to run it in and the data file."""
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    deps = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages") and os.path.isdir(p)]
    # addsitedir: those directories' own .pth files run too (an editable install's finder).
    (site / "codea1-test-deps.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in deps))
    data = venv / "share" / "codea1-own-reads" / "providers.json"
    data.parent.mkdir(parents=True)
    data.write_text('{"provider": "codea1-own-reads"}')
    (venv / "not-package-data.txt").write_text("hunter2")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return str(venv / "bin" / "python"), env, data


@pytest.fixture
def scratch():
    """A fresh directory in /tmp, open to all as `mkdir` leaves it (the children's user must
    reach the environment in it), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="codea1-own-reads-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("name,binary", EXECUTORS)
def test_a_program_reads_its_own_proc_entries_and_its_installations_data_and_nothing_else(name, binary, scratch):
    """In a throwaway virtual environment: the program reads /proc/self/maps (and finds the
    loaded libraries in it), status and statm, and ``sys.prefix/share/...``; it reads none of
    pid 1's or its forker's entries, the benchmark data (a decoy beside the environment, and
    the real file where there is one), nor a file in the prefix outside share/, directly or
    through /proc/self/root and /proc/self/cwd."""
    if binary and shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed (apt-get install {name})")
    python, env, data = throwaway_environment(scratch)
    decoy = scratch / "data" / "BigCodeBench-v0.1.0.jsonl"
    decoy.parent.mkdir()
    decoy.write_text('{"task_id": "BigCodeBench/0", "canonical_solution": "hunter2"}\n')
    refused = [str(decoy), str(scratch / "venv" / "not-package-data.txt")]
    if BENCHMARK_FILE.exists():
        refused.append(str(BENCHMARK_FILE.resolve()))
    code = LOOK.replace("REFUSED", repr(refused))
    done = subprocess.run([python, "-c", DRIVER, json.dumps({"executor": name, "code": code})], env=env, cwd=scratch,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["landlock"], "the zygote reports no Landlock where this process has it"
    assert report["value"] == {"libraries": True, "status": True, "statm": True, "machine": True,
                               "data": data.read_text(), "read": []}, report["raw"]
    assert "its own process's entries" in report["proc"]


def _find(pattern: str, deadline: float) -> str | None:
    """A file of a running job, as the host sees it: in /tmp, or in the private /tmp of a
    wrapped zygote (through /proc/PID/root); the path inside its sandbox's view."""
    while time.monotonic() < deadline:
        found = glob.glob("/tmp/codea1_zygote_*/job_*/" + pattern)
        if found:
            return found[0]
        for path in glob.glob("/proc/[0-9]*/root/tmp/codea1_zygote_*/job_*/" + pattern):
            return "/" + path.split("/root/", 1)[1]
        time.sleep(0.05)
    return None


def _cwd(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


@pytest.mark.parametrize("name,binary", EXECUTORS)
def test_another_jobs_files_stay_refused_through_the_programs_own_proc_links(plugins, name, binary):
    """Job A writes a file in its directory and waits; job B, on another executor, knows the
    file's path and tries it directly, through its own /proc/self/root and /proc/self/cwd, and
    through A's /proc entries: all refused, while B reads its own /proc/self/status."""
    if binary and shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed (apt-get install {name})")
    token = uuid.uuid4().hex
    writer = (f"import os, time\ndef f(x):\n    open('secret-{token}.txt', 'w').write('hunter2')\n"
              "    end = time.monotonic() + 60\n"
              "    while not os.path.exists('release') and time.monotonic() < end:\n        time.sleep(0.02)\n"
              "    return os.getpid()\n")
    first = plugins.executors.create(name, {}, workers=1)
    second = plugins.executors.create(name, {}, workers=1)
    with first, second:
        if first.info()["landlock"] == "none":
            pytest.skip("the zygote has no Landlock here")
        second.info()  # started before A runs: B's zygote is not A's
        verdicts, secret = [], None
        thread = threading.Thread(target=lambda: verdicts.append(run_code(first, writer, "assert f(0) == 0", "f",
                                                                          limit=90.0)))
        thread.start()
        try:
            secret = _find(f"secret-{token}.txt", time.monotonic() + 60)
            assert secret is not None, "job A's file did not appear"
            owner = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cwd(pid) == os.path.dirname(secret)]
            tries = [secret, "/proc/self/root" + secret, "/proc/self/cwd/" + "../" * 30 + secret.lstrip("/"),
                     f"/proc/self/cwd/../../{'/'.join(secret.split('/')[-3:])}",
                     *(f"/proc/{pid}/cwd/secret-{token}.txt" for pid in owner),
                     *(f"/proc/{pid}/{entry}" for pid in owner for entry in ("status", "maps", "environ"))]
            reader = ("def f(x):\n    seen = []\n"
                      f"    for path in {tries!r}:\n"
                      "        try:\n            seen.append(open(path).read())\n"
                      "        except OSError:\n            seen.append(None)\n"
                      "    return [seen, open('/proc/self/status').read().startswith('Name:')]\n")
            verdict, raw = run_code(second, reader, f"assert f(0) == {[[None] * len(tries), True]!r}", "f",
                                    limit=30.0)
        finally:
            if secret is not None:  # A's directory as the host sees it
                job = os.path.dirname(secret)
                for directory in [job] if os.path.isdir(job) else glob.glob(f"/proc/[0-9]*/root{job}"):
                    Path(directory, "release").write_text("")
            thread.join(120)
    assert verdict.status == PASS, (verdict.message, raw)
    assert verdicts and verdicts[0][0].status != "sandbox_error"

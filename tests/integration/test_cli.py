"""The `lepton` CLI, run as a subprocess both as `python -m lepton` and as the `lepton` console script.

Every exit path of a target (return, exception, `sys.exit(n)`, SIGTERM, Ctrl-C) must leave a profile
that parses and holds the kernels launched before the end. Scripts record kernels through the fake
backend (`-b fake`, which `LEPTON_EXTRA_BACKENDS` names to the CLI: tests/twins), so none of this needs
a GPU.

The console-script variant needs `lepton` on PATH (or `LEPTON_CLI=/path/to/lepton`), e.g. from
`python -m venv --system-site-packages /tmp/lv && /tmp/lv/bin/pip install -e .`; it is skipped
where there is none.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from twins import FAKE_BACKEND

from lepton.backends.base import EXTRA_BACKENDS_VARIABLE
from lepton.cli import run as cli

SRC = Path(__file__).resolve().parents[2] / "src"
TESTS = Path(__file__).resolve().parents[1]  # the fake backend's package, twins
TIMEOUT_S = 60

KERNEL = """\
import lepton
from twins.fake_backend import FakeBackend
if FakeBackend.instances:  # under `lepton -b fake`; the script also runs under plain python
    FakeBackend.instances[-1].launch({name!r}, 1000)
"""


# -- helpers ------------------------------------------------------------------------------------------
def console_script() -> str | None:
    return os.environ.get("LEPTON_CLI") or shutil.which("lepton")


@pytest.fixture(params=["python -m lepton", "lepton"])
def lepton(request) -> list[str]:
    """The command that starts the CLI."""
    if request.param == "lepton":
        exe = console_script()
        if exe is None:
            pytest.skip("no `lepton` console script on PATH (set LEPTON_CLI or install the package)")
        return [exe]
    return [sys.executable, "-m", "lepton"]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "OMPI_COMM_WORLD_RANK", "LEPTON_DISABLE", "TRITON_PROTON_DISABLE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), str(TESTS), env.get("PYTHONPATH")]))
    env[EXTRA_BACKENDS_VARIABLE] = FAKE_BACKEND  # `-b fake`
    env.update(extra)
    return env


def run(cmd: list[str], *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*cmd, *args], check=False, capture_output=True, text=True, timeout=TIMEOUT_S,
                          env=env or child_env())


def write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code))
    return path


def kernel_counts(profile: Path) -> dict[str, int]:
    """{kernel name: count} of a hatchet JSON file (nodes with a `count` metric, ROOT excluded)."""
    root = json.loads(profile.read_text())[0]
    counts: dict[str, int] = {}
    stack = list(root["children"])
    while stack:
        node = stack.pop()
        stack += node["children"]
        if "count" in node["metrics"]:
            counts[node["frame"]["name"]] = counts.get(node["frame"]["name"], 0) + node["metrics"]["count"]
    return counts


def node_names(profile: Path) -> set[str]:
    root = json.loads(profile.read_text())[0]
    names, stack = set(), [root]
    while stack:
        node = stack.pop()
        names.add(node["frame"]["name"])
        stack += node["children"]
    return names


def same_python(path: str) -> bool:
    """The interpreter the tests run in, however it is spelled (a console script's shebang may name
    `python3` where the tests run `python`)."""
    return os.path.realpath(path) == os.path.realpath(sys.executable)


def written_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("lepton: profile")]
    assert len(lines) == 1, stderr
    return lines[0]


def assert_profile(stderr: str, path: Path, kernels: dict[str, int]) -> None:
    """One stderr line names `path`; the file parses and holds exactly `kernels`."""
    assert written_line(stderr) == f"lepton: profile written to {path}"
    assert kernel_counts(path) == kernels


# -- point 2: every exit path writes the profile ---------------------------------------------------------
def test_a_script_that_returns_exits_0_with_python_s_argv_path_and_name(lepton, tmp_path):
    write(tmp_path / "sub" / "helper.py", "VALUE = 42\n")
    write(tmp_path / "sub" / "train.py", KERNEL.format(name="k_ok") + """\
import json, sys
import helper  # found because sys.path[0] is the script's folder
print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "name": __name__, "v": helper.VALUE}))
""")
    out = run(lepton, "-b", "fake", "sub/train.py", "--epochs", "1", "-n", "x")
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    script = str(tmp_path / "sub" / "train.py")  # python keeps "sub/train.py"; runpy makes it absolute
    assert seen == {"argv": [script, "--epochs", "1", "-n", "x"], "path0": str(tmp_path / "sub"),
                    "name": "__main__", "v": 42}
    assert_profile(out.stderr, tmp_path / "proton.hatchet", {"k_ok": 1})
    run_metadata = json.loads((tmp_path / "proton.hatchet").read_text())[0]["lepton"]
    python, *command = run_metadata["command_line"]  # the target's command line, not lepton's
    assert same_python(python) and command == ["sub/train.py", "--epochs", "1", "-n", "x"]
    assert run_metadata["cwd"] == str(tmp_path)


def test_an_exception_prints_python_s_traceback_exits_1_and_writes_the_profile(lepton, tmp_path):
    write(tmp_path / "boom.py", KERNEL.format(name="k_raise") + """\
def inner():
    raise ValueError("boom")
inner()
""")
    plain = subprocess.run([sys.executable, "boom.py"], check=False, capture_output=True, text=True,
                           timeout=TIMEOUT_S, env=child_env())
    assert plain.returncode == 1 and plain.stderr.startswith("Traceback")
    out = run(lepton, "-b", "fake", "boom.py")
    assert out.returncode == 1
    # The traceback python prints, without frames of lepton's runner or runpy, then lepton's line.
    assert out.stderr == plain.stderr + f"lepton: profile written to {tmp_path / 'proton.hatchet'}\n"
    assert kernel_counts(tmp_path / "proton.hatchet") == {"k_raise": 1}


@pytest.mark.parametrize("exit_arg, code, message", [
    ("3", 3, ""), ("0", 0, ""), ("None", 0, ""), ("'bad config'", 1, "bad config\n")])
def test_sys_exit_passes_its_code_through_and_writes_the_profile(lepton, tmp_path, exit_arg, code,
                                                                 message):
    write(tmp_path / "quit.py", KERNEL.format(name="k_exit") + f"import sys\nsys.exit({exit_arg})\n")
    out = run(lepton, "-b", "fake", "quit.py")
    assert out.returncode == code
    assert out.stderr.startswith(message)
    assert_profile(out.stderr, tmp_path / "proton.hatchet", {"k_exit": 1})


SLOW = KERNEL.format(name="k_before") + """\
import time
try:
    print("ready", flush=True)
    time.sleep(TIMEOUT)
finally:
    print("finally ran", flush=True)
"""


def run_until_ready_then(cmd: list[str], sig: int) -> tuple[int, str, str]:
    """Starts `cmd`, waits for its "ready" line, sends `sig`; returns (code, stdout, stderr)."""
    # Ctrl-C reaches a process whose SIGINT is not ignored; a shell's background job has it
    # ignored, and a child inherits that, so the child starts with the default again.
    # (preexec_fn is unsafe only with threads; this test process starts none.)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    try:
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    finally:
        proc.kill()
    return proc.returncode, "ready\n" + stdout, stderr


@pytest.mark.parametrize("sig, code, last_stderr_line", [
    (signal.SIGTERM, 143, None), (signal.SIGINT, 130, "KeyboardInterrupt"), (signal.SIGHUP, 129, None)])
def test_sigterm_sighup_and_ctrl_c_run_finally_blocks_and_write_the_profile(lepton, tmp_path, sig, code,
                                                                     last_stderr_line):
    write(tmp_path / "slow.py", SLOW.replace("TIMEOUT", str(TIMEOUT_S)))
    rc, stdout, stderr = run_until_ready_then([*lepton, "-b", "fake", "slow.py"], sig)
    assert rc == code, stderr
    assert stdout == "ready\nfinally ran\n"
    if last_stderr_line:  # Ctrl-C prints its traceback, as python does
        assert stderr.splitlines()[-2] == last_stderr_line
    assert_profile(stderr, tmp_path / "proton.hatchet", {"k_before": 1})


def test_a_sigterm_while_the_profile_is_written_waits_for_the_write_and_exits_143(lepton, tmp_path):
    write(tmp_path / "late.py", KERNEL.format(name="k_late") + """\
import os, signal
fake = FakeBackend.instances[-1]
flush = fake._do_flush

def flush_then_get_terminated():  # the backend's flush runs inside the CLI's finalize
    os.kill(os.getpid(), signal.SIGTERM)
    flush()

fake._do_flush = flush_then_get_terminated
""")
    out = run(lepton, "-b", "fake", "late.py")
    assert out.returncode == 143, out.stderr
    assert_profile(out.stderr, tmp_path / "proton.hatchet", {"k_late": 1})


def test_a_module_target_runs_as_python_dash_m_would_run_it(lepton, tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "mod.py", KERNEL.format(name="k_module") + """\
import json, sys
print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "name": __name__}))
sys.exit(4)
""")
    out = run(lepton, "-b", "fake", "-m", "pcsampling", "python", "-m", "pkg.mod", "a", "-m", "b")
    assert out.returncode == 4, out.stderr
    assert json.loads(out.stdout) == {"argv": [str(tmp_path / "pkg" / "mod.py"), "a", "-m", "b"],
                                      "path0": str(tmp_path), "name": "__main__"}
    assert_profile(out.stderr, tmp_path / "proton.hatchet", {"k_module": 1})
    python, *command = json.loads((tmp_path / "proton.hatchet").read_text())[0]["lepton"]["command_line"]
    assert same_python(python) and command == ["-m", "pkg.mod", "a", "-m", "b"]


@pytest.mark.parametrize("failing, code", [(False, 0), (True, 1)])
def test_pytest_runs_in_process_and_its_return_code_is_the_exit_code(lepton, tmp_path, failing, code):
    write(tmp_path / "test_inner.py", KERNEL.format(name="k_import") + f"""\
def test_launches():
    FakeBackend.instances[-1].launch("k_test", 1000)

def test_maybe_fails():
    assert not {failing}
""")
    out = run(lepton, "-b", "fake", "pytest", "-q", "-p", "no:cacheprovider", "test_inner.py")
    assert out.returncode == code, out.stdout + out.stderr
    assert ("1 failed, 1 passed" if failing else "2 passed") in out.stdout
    assert_profile(out.stderr, tmp_path / "proton.hatchet", {"k_import": 1, "k_test": 1})


def test_the_default_backend_records_cpu_scopes_without_a_gpu(lepton, tmp_path):
    write(tmp_path / "scopes.py", """\
import os, lepton
with lepton.scope("outer"):
    with lepton.scope("inner"):
        pass
os.chdir("..")  # the profile still goes where lepton was started
""")
    out = run(lepton, "-n", "scopes", "scopes.py")
    assert out.returncode == 0, out.stderr
    path = tmp_path / "scopes.hatchet"
    assert written_line(out.stderr) == f"lepton: profile written to {path}"
    assert {"outer", "inner"} <= node_names(path)


def test_trace_data_writes_a_chrome_trace(lepton, tmp_path):
    write(tmp_path / "t.py", KERNEL.format(name="k_trace"))
    out = run(lepton, "-b", "fake", "-d", "trace", "-n", "out/run1", "t.py")
    assert out.returncode == 0, out.stderr
    path = tmp_path / "out" / "run1.chrome_trace"
    assert written_line(out.stderr) == f"lepton: profile written to {path}"
    assert "k_trace" in {e.get("name") for e in json.loads(path.read_text())["traceEvents"]}


def test_a_dash_name_puts_the_profile_alone_on_stdout_and_the_program_s_stdout_on_stderr(lepton, tmp_path):
    """`-n -`: the program's print()s, its raw writes to file descriptor 1 and its children's go to
    stderr, in their order; stdout holds the profile and nothing else."""
    write(tmp_path / "talk.py", KERNEL.format(name="k_talk") + """\
import os, subprocess, sys
print("from print")
os.write(1, b"from fd 1\\n")
subprocess.run([sys.executable, "-c", "print('from a child')"], check=True)
print("buffered at the end", end="")
""")
    out = run(lepton, "-b", "fake", "-n", "-", "talk.py")
    assert out.returncode == 0, out.stderr
    root = json.loads(out.stdout)[0]  # nothing but the profile
    assert [child["frame"]["name"] for child in root["children"]] == ["k_talk"]
    said = out.stderr
    assert said.index("from print") < said.index("from fd 1") < said.index("from a child") \
        < said.index("buffered at the end") < said.index("lepton: profile written to stdout")


def test_print_shows_the_viewer_s_tree_or_says_the_viewer_is_missing(lepton, tmp_path):
    write(tmp_path / "p.py", KERNEL.format(name="k_printed"))
    out = run(lepton, "-b", "fake", "--print", "time/ns", "p.py")
    assert_profile(out.stderr, tmp_path / "proton.hatchet", {"k_printed": 1})
    assert out.returncode == 0, out.stderr
    if importlib.util.find_spec("lepton.cli.view") is None:
        assert "lepton: --print: the viewer is not available" in out.stderr
    else:
        assert "k_printed" in out.stdout


@pytest.mark.skipif(importlib.util.find_spec("lepton.cli.view") is None, reason="no viewer yet")
@pytest.mark.parametrize("exit_arg, code", [("0", 2), ("3", 3)])
def test_a_failing_print_fails_a_run_that_succeeded_and_keeps_the_target_s_failure(lepton, tmp_path,
                                                                                    exit_arg, code):
    write(tmp_path / "p.py", KERNEL.format(name="k_printed") + f"import sys\nsys.exit({exit_arg})\n")
    out = run(lepton, "-b", "fake", "--print", "no_such_metric", "p.py")
    assert out.returncode == code  # the viewer says 2 for an unknown metric
    assert_profile(out.stderr, tmp_path / "proton.hatchet", {"k_printed": 1})


def test_disabled_profiling_runs_the_target_and_writes_nothing(lepton, tmp_path):
    write(tmp_path / "quit.py", "import sys, lepton\nassert lepton.start() is None\nsys.exit(3)\n")
    out = run(lepton, "-b", "fake", "quit.py", env=child_env(LEPTON_DISABLE="1"))
    assert out.returncode == 3, out.stderr
    assert out.stderr == ("lepton: profiling is disabled (LEPTON_DISABLE or TRITON_PROTON_DISABLE); "
                          "no profile is written\n")
    assert not list(tmp_path.glob("*.hatchet"))


# -- point 3: start/finalize/activate/deactivate inside a script run under the CLI ----------------------
def test_calls_inside_the_script_join_the_cli_session_instead_of_starting_or_ending_one(lepton, tmp_path):
    write(tmp_path / "api.py", """\
import lepton
from twins.fake_backend import FakeBackend
from lepton.runtime.registry import REGISTRY
fake = FakeBackend.instances[-1]
cli_sid = REGISTRY.pinned_session()
assert lepton.start("mine", backend="fake", data="trace") == cli_sid  # joins: no second session
fake.launch("k_joined")
lepton.finalize()  # writes nothing: the CLI's session runs until the script ends
assert list(REGISTRY.sessions) == [cli_sid]
fake.launch("k_after_finalize")
lepton.deactivate()
fake.launch("k_paused")
lepton.activate()
fake.launch("k_activated")
lepton.deactivate(cli_sid)
fake.launch("k_paused_by_id")
lepton.start()  # re-activates the CLI's session
fake.launch("k_restarted")

@lepton.profile
def step():
    fake.launch("k_decorated")

step()  # the decorator deactivates the session after the call, as it does outside the CLI
fake.launch("k_after_decorated")
""")
    out = run(lepton, "-b", "fake", "api.py")
    assert out.returncode == 0, out.stderr
    assert_profile(out.stderr, tmp_path / "proton.hatchet", {
        "k_joined": 1, "k_after_finalize": 1, "k_activated": 1, "k_restarted": 1, "k_decorated": 1})
    assert not list(tmp_path.glob("mine*"))


def test_finalize_with_the_cli_session_id_leaves_it_running(lepton, tmp_path):
    write(tmp_path / "early.py", """\
import lepton
from twins.fake_backend import FakeBackend
sid = lepton.start()
FakeBackend.instances[-1].launch("k_early", 1000)
assert lepton.finalize(sid) == []
FakeBackend.instances[-1].launch("k_late", 1000)
""")
    out = run(lepton, "-b", "fake", "early.py")
    assert out.returncode == 0, out.stderr
    assert kernel_counts(tmp_path / "proton.hatchet") == {"k_early": 1, "k_late": 1}


# -- point 4: one file per rank ---------------------------------------------------------------------------
RANKED = """\
import os, lepton
from twins.fake_backend import FakeBackend
FakeBackend.instances[-1].launch("k_rank" + (os.environ.get("RANK") or os.environ["OMPI_COMM_WORLD_RANK"]))
"""


def test_two_torchrun_ranks_write_two_files(lepton, tmp_path):
    write(tmp_path / "ddp.py", RANKED)
    procs = [subprocess.Popen([*lepton, "-b", "fake", "ddp.py"], stderr=subprocess.PIPE, text=True,
                              env=child_env(RANK=str(rank))) for rank in (0, 1)]
    for rank, proc in enumerate(procs):
        _, stderr = proc.communicate(timeout=TIMEOUT_S)
        assert proc.returncode == 0, stderr
        assert_profile(stderr, tmp_path / f"proton.rank{rank}.hatchet", {f"k_rank{rank}": 1})
    assert sorted(p.name for p in tmp_path.glob("*.hatchet")) == ["proton.rank0.hatchet",
                                                                 "proton.rank1.hatchet"]


def test_an_mpi_rank_goes_before_the_extension_of_a_name_that_has_one(lepton, tmp_path):
    write(tmp_path / "mpi.py", RANKED)
    out = run(lepton, "-b", "fake", "-n", "out.hatchet", "mpi.py", env=child_env(OMPI_COMM_WORLD_RANK="2"))
    assert out.returncode == 0, out.stderr
    assert_profile(out.stderr, tmp_path / "out.rank2.hatchet", {"k_rank2": 1})


# -- point 5: bad usage is one line and exit 2 -------------------------------------------------------------
@pytest.mark.parametrize("args, env, says", [
    ([], {}, "no target"),
    (["missing.py"], {}, "can't open file 'missing.py'"),
    (["-c", "bogus", "ok.py"], {}, "argument -c/--context: invalid choice: 'bogus'"),
    (["-d", "tree2", "ok.py"], {}, "argument -d/--data: invalid choice: 'tree2'"),
    (["-k", "torch", "ok.py"], {}, "argument -k/--hook: invalid choice: 'torch'"),
    (["-b", "nvperf", "ok.py"], {}, "argument -b/--backend: invalid choice: 'nvperf'"),
    (["--bogus", "ok.py"], {}, "unrecognized arguments: --bogus"),
    (["-n"], {}, "argument -n/--name: expected one argument"),
    (["python", "-m", "no_such_module_xyz"], {}, "No module named no_such_module_xyz"),
    (["python"], {}, "a python target must be"),
    (["-d", "trace", "--print", "time/ms", "ok.py"], {}, "--print needs --data tree"),
    (["ok.py"], {"RANK": "first"}, "RANK='first' is not a rank"),
])
def test_bad_usage_is_one_line_and_exit_2_and_runs_nothing(lepton, tmp_path, args, env, says):
    write(tmp_path / "ok.py", "open('ran', 'w').close()\n")
    out = run(lepton, *args, env=child_env(**env))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("lepton: error: "), out.stderr
    assert says in out.stderr
    assert not (tmp_path / "ran").exists() and not list(tmp_path.glob("*.hatchet"))


def test_help_and_version_exit_0(lepton):
    out = run(lepton, "--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: lepton [options] script.py")
    out = run(lepton, "--version")
    assert out.returncode == 0 and out.stdout.startswith("lepton ")



def test_users_are_offered_the_real_backends_and_never_the_test_twin(lepton, tmp_path):
    """Without the tests' `LEPTON_EXTRA_BACKENDS`, `-b` offers what ships: cpu, cupti, instrumentation."""
    write(tmp_path / "ok.py", "open('ran', 'w').close()\n")
    env = child_env()
    del env[EXTRA_BACKENDS_VARIABLE]
    out = run(lepton, "--help", env=env)
    assert "{cpu,cupti,instrumentation}" in out.stdout and "fake" not in out.stdout
    out = run(lepton, "-b", "fake", "ok.py", env=env)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("lepton: error: argument -b/--backend: invalid choice: 'fake' (choose from ")
    assert "fake" not in out.stderr.split("choose from")[1]
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("backend", ["cupti", "instrumentation"])
def test_a_gpu_backend_without_a_gpu_ends_with_one_line_saying_a_gpu_is_needed(backend, tmp_path, monkeypatch,
                                                                                capsys):
    from lepton.backends import cupti

    monkeypatch.setattr(cupti, "gpu_probe", lambda: (False, "no libcuda.so.1 (NVIDIA driver)"))
    write(tmp_path / "ok.py", "open('ran', 'w').close()\n")
    assert cli.main(["-b", backend, str(tmp_path / "ok.py")]) == cli.EXIT_USAGE
    said = (f"lepton: error: backend={backend!r} needs an NVIDIA GPU, and none is usable here (no libcuda.so.1 "
            "(NVIDIA driver)); run it on a machine with one, or leave the backend out to record CPU scopes")
    assert capsys.readouterr().err.splitlines() == [said]
    assert not (tmp_path / "ran").exists()


# -- the parts, in-process ------------------------------------------------------------------------------------
def test_lepton_options_end_where_the_target_starts():
    assert cli.split_target(["-m", "pcsampling", "python", "-m", "mod", "-n", "x"]) == (
        ["-m", "pcsampling"], ["python", "-m", "mod", "-n", "x"])
    assert cli.split_target(["--name=a", "-b", "fake", "--", "-weird.py"]) == (
        ["--name=a", "-b", "fake"], ["-weird.py"])


def test_parse_args_gives_typed_options_with_an_absolute_ranked_name(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "07")
    write(tmp_path / "t.py", "")
    opts = cli.parse_args(["-n", "runs/a", "-c", "PYTHON", "t.py", "x"])
    assert opts == cli.Options(name=str(tmp_path / "runs" / "a.rank7"), backend=None, context="python",
                               data="tree", mode=None, hook=None, print_metrics=None,
                               target=cli.Target("script", "t.py", ("x",)))


@pytest.mark.parametrize("name, rank, expected", [
    ("/r/proton", "3", "/r/proton.rank3"), ("/r/out.hatchet", "0", "/r/out.rank0.hatchet"),
    ("/r/t.chrome_trace", "1", "/r/t.rank1.chrome_trace"), ("/r/proton", None, "/r/proton")])
def test_ranked_name(name, rank, expected):
    assert cli.ranked_name(name, rank) == expected


def test_rank_comes_from_torchrun_before_mpi():
    assert cli.rank_from_env({"RANK": "1", "OMPI_COMM_WORLD_RANK": "5"}) == "1"
    assert cli.rank_from_env({"OMPI_COMM_WORLD_RANK": "5"}) == "5"
    assert cli.rank_from_env({"RANK": " "}) is None


@pytest.fixture
def default_sigterm():
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_sigterm_raises_system_exit_143_while_the_target_runs(default_sigterm):
    with pytest.raises(SystemExit) as raised, cli.RunSignals():
        os.kill(os.getpid(), signal.SIGTERM)  # os.kill runs the handler before it returns
    assert raised.value.code == 143
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_signals_after_the_target_ended_are_recorded_until_the_profile_is_written(default_sigterm):
    with cli.RunSignals() as signals:
        signals.defer()
        os.kill(os.getpid(), signal.SIGTERM)  # would end this process if it were not deferred
    assert signals.received == [signal.SIGTERM]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_forked_child_that_outlives_its_parent_does_not_write_the_parents_profile(lepton, tmp_path):
    """The child ends its copy of the CLI's session quietly: one "profile written" line (the
    parent's), and the file holds the parent's kernels, not the child's stale copy."""
    write(tmp_path / "forks.py", KERNEL.format(name="k_parent") + """\
import os, sys, time
pid = os.fork()
if pid == 0:
    time.sleep(1.0)  # outlive the parent, which writes its profile meanwhile
    if FakeBackend.instances:
        FakeBackend.instances[-1].launch("k_child", 1000)
    open("child_done", "w").close()
    sys.exit(0)  # through the CLI's normal exit path, in the child
""")
    out = run(lepton, "-b", "fake", "forks.py")  # returns once the child closed the pipes too
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "child_done").exists()
    assert_profile(out.stderr, tmp_path / "proton.hatchet", {"k_parent": 1})
    assert "finalized the profiling session itself" not in out.stderr


@pytest.mark.parametrize("metrics", ["time/hours", "time/ms,,count", "tflop/xs"])
def test_a_bad_print_metric_list_is_refused_before_the_target_runs(lepton, tmp_path, metrics):
    write(tmp_path / "ran.py", "open('ran', 'w').close()\n")
    out = run(lepton, "-b", "fake", "--print", metrics, "ran.py")
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("lepton: error: --print: bad metric list") and out.stderr.count("\n") == 1
    assert not (tmp_path / "ran").exists() and not (tmp_path / "proton.hatchet").exists()


def test_a_profile_that_cannot_go_where_asked_goes_to_the_current_folder_with_one_line(lepton, tmp_path):
    write(tmp_path / "ok.py", KERNEL.format(name="k_kept"))
    (tmp_path / "a_file").write_text("")
    out = run(lepton, "-b", "fake", "-n", str(tmp_path / "a_file" / "prof"), "ok.py")
    assert out.returncode == 0, out.stderr
    moved = [line for line in out.stderr.splitlines() if "could not write" in line]
    assert len(moved) == 1 and str(tmp_path / "prof.hatchet") in moved[0], out.stderr
    assert "Traceback" not in out.stderr and ".lepton-" not in out.stderr
    assert kernel_counts(tmp_path / "prof.hatchet") == {"k_kept": 1}

"""The README's install and example, as written: pip installs the package
from the checkout into a fresh virtual environment that sees Debian's grpcio
and protobuf (no package index), and example.py, copied into an empty
folder, runs against a jetgate started as the README starts it."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import urllib.request

from conftest import ROOT, free_port, wait_for

PKG = ROOT / "clients" / "python"
README = PKG / "README.md"


def readme_block(heading: str, lang: str) -> str:
    """The first ```lang block after the README's ## heading."""
    text = README.read_text()
    at = text.index(f"\n## {heading}\n")
    m = re.compile(rf"^```{lang}\n(.*?)^```$", re.S | re.M).search(text, at)
    assert m, f"no {lang} block under {heading!r}"
    return m.group(1)


def clean_build_outputs() -> None:
    # pip builds in the source folder; what an earlier build left there
    # (build/lib holds removed modules too) must not go into this wheel.
    shutil.rmtree(PKG / "build", ignore_errors=True)
    for p in PKG.glob("*.egg-info"):
        shutil.rmtree(p, ignore_errors=True)


def test_readme_example_is_example_py():
    body = (PKG / "example.py").read_text()
    code = body.split('"""', 2)[2].lstrip("\n")  # after the docstring
    assert readme_block("Example", "python") == code


def test_install_into_a_fresh_venv_and_run_the_example(binary, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    venv = tmp_path / ".venv"
    # The commands of the README's "Install", run from the repository's root.
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True, env=env)
    clean_build_outputs()
    try:
        assert ".venv/bin/pip install --no-index --no-build-isolation ./clients/python" in README.read_text()
        install = [str(venv / "bin" / "pip"), "install", "--no-index", "--no-build-isolation", "./clients/python"]
        subprocess.run(install, cwd=ROOT, check=True, env=env, timeout=300)
    finally:
        clean_build_outputs()

    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(PKG / "example.py", app / "example.py")
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import jetgate, jetgate.aio; print(jetgate.__file__)"],
        cwd=app, env=env, check=True, capture_output=True, text=True,
    ).stdout.strip()
    assert pathlib.Path(where).is_relative_to(venv), f"jetgate imported from {where}, not the venv"

    # jetgate as the README starts it (go run ./cmd/jetgate --ack-wait 3s), on free ports.
    grpc_addr, http_addr = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    with open(tmp_path / "jetgate.log", "wb") as log:
        gw = subprocess.Popen(
            [binary, "--ack-wait", "3s", "--grpc-addr", grpc_addr, "--http-addr", http_addr,
             "--data-dir", str(tmp_path / "data")],
            stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            def ready() -> bool:
                assert gw.poll() is None, f"jetgate exited: {(tmp_path / 'jetgate.log').read_text()}"
                try:
                    with urllib.request.urlopen(f"http://{http_addr}/readyz", timeout=1) as r:
                        return r.status == 200
                except OSError:
                    return False

            wait_for(ready, 30, "jetgate /readyz", every=0.05)
            run = subprocess.run(
                [str(venv / "bin" / "python"), "example.py", grpc_addr],
                cwd=app, env=env, capture_output=True, text=True, timeout=150,
            )
        finally:
            gw.terminate()
            gw.wait(10)
    out = run.stdout
    assert run.returncode == 0, f"example.py failed:\n{out}\n{run.stderr}"
    # What the README says it prints.
    assert "handled 'one' (delivery 1)" in out and "handled 'two' (delivery 1)" in out
    assert "handled 'slow' (delivery 1)" in out and "handled 'slow' (delivery 2)" not in out
    assert "handled 'fail' (delivery 3)" in out
    assert out.count("on_error: HANDLER_FAILED") == 2
    extended = int(re.search(r"extended=(\d+)", out).group(1))
    assert extended >= 1

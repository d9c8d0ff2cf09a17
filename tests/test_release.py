"""The release: the sdist and the wheel build from the checkout's files and pass `twine check`, and the wheel,
installed in a fresh virtual environment outside the checkout, runs `azjax` with the files it reads at run time
(the shipped agents, the labelled positions, the browser page).

One module-scoped build and install, then one test per check. The new environment gets this one's dependencies
through a .pth file that names this environment's site-packages: a plain path line is not processed for the .pth
files in it, so the checkout's editable azjax is not visible there, and `import azjax` must find the wheel's."""

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
from tiny import TINY_OVERRIDES, cli_args

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
NAME, VERSION = PROJECT["name"], PROJECT["version"]
SDIST_FILES = ["pyproject.toml", "README.md", "CHANGELOG.md", "CITATION.cff"] + (
    ["LICENSE"] if (ROOT / "LICENSE").exists() else [])


def _run(args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs)


def _release_files() -> list[str]:
    """The checkout's files as a release sees them: tracked, and new ones not yet committed, but nothing that git
    ignores (build outputs, caches, run directories)."""
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, check=True)
    return [name for name in listed.stdout.split("\0") if name and (ROOT / name).is_file()]


def _copy_checkout(files: list[str], destination: Path) -> None:
    for name in files:
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)


def _site_packages(env: Path) -> Path:
    return Path(sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)}))


class Release:
    """The built files and the environment the wheel is installed in."""

    def __init__(self, base: Path):
        self.files = _release_files()
        source, self.dist, self.env, self.cwd = base / "src", base / "dist", base / "env", base / "elsewhere"
        _copy_checkout(self.files, source)
        # Without isolation: the build system's setuptools comes from the dev extra, so no index is needed.
        built = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", self.dist, source])
        assert built.returncode == 0, f"the build failed (the dev extra installed?):\n{built.stdout}{built.stderr}"
        self.sdist, = self.dist.glob("*.tar.gz")
        self.wheel, = self.dist.glob("*.whl")
        venv.EnvBuilder(with_pip=False).create(self.env)
        self.site_packages = _site_packages(self.env)
        (self.site_packages / "test_environment.pth").write_text(
            "".join(f"{path}\n" for path in dict.fromkeys(sysconfig.get_path(kind) for kind in ("purelib", "platlib"))))
        installed = _run([sys.executable, "-m", "pip", "--python", self.env / "bin" / "python", "install",
                          "--no-deps", "--no-index", "--no-compile", self.wheel])
        assert installed.returncode == 0, installed.stdout + installed.stderr
        self.cwd.mkdir()
        self.environ = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONHOME")}
        self.environ.update(VIRTUAL_ENV=str(self.env), PATH=f"{self.env / 'bin'}{os.pathsep}{os.environ['PATH']}")

    def azjax(self, *args, stdin=subprocess.DEVNULL) -> subprocess.Popen:
        """The new environment's `azjax` entry point, started in a directory outside the checkout."""
        return subprocess.Popen([str(self.env / "bin" / "azjax"), *map(str, args)], cwd=self.cwd, env=self.environ,
                                stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Release:
    return Release(tmp_path_factory.mktemp("release"))


def test_twine_checks_the_sdist_and_the_wheel(release):
    checked = _run([sys.executable, "-m", "twine", "check", "--strict", release.sdist, release.wheel])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2, checked.stdout


def test_the_sdist_holds_the_release_files(release):
    with tarfile.open(release.sdist) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert release.sdist.name == f"{NAME}-{VERSION}.tar.gz"
    missing = [name for name in SDIST_FILES if name not in names]
    assert not missing, missing


def test_the_wheel_holds_every_file_of_the_package(release):
    with zipfile.ZipFile(release.wheel) as wheel:
        names = set(wheel.namelist())
    package = [name for name in release.files if name.startswith(f"{NAME}/")]
    assert any(name.endswith("model.msgpack") for name in package)  # the shipped agents are among them
    missing = [name for name in package if name not in names]
    assert not missing, missing


def test_the_new_environment_imports_the_wheel_not_the_checkout(release):
    program = "import importlib.metadata, azjax; print(azjax.__file__); print(importlib.metadata.version('azjax'))"
    found = _run([release.env / "bin" / "python", "-c", program], cwd=release.cwd, env=release.environ)
    assert found.returncode == 0, found.stderr
    module, version = found.stdout.split()
    assert Path(module).resolve().is_relative_to(release.site_packages.resolve()), module
    assert version == VERSION


def test_the_installed_command_lists_plays_and_trains(release, tmp_path):
    # The training run compiles for most of the test's time: the other two commands run beside it.
    train = release.azjax("train", *cli_args(TINY_OVERRIDES), "--iterations", 1, "--eval-every", 0, "--no-progress",
                          "--devices", 1, "--out", tmp_path / "run")
    listed = release.azjax("pretrained")
    out, err = listed.communicate(timeout=300)
    assert listed.returncode == 0, err
    assert "connect_four" in out
    play = release.azjax("play", "connect_four", stdin=subprocess.PIPE)
    out, err = play.communicate("quit\n", timeout=300)
    assert play.returncode == 0, out + err
    out, err = train.communicate(timeout=300)
    assert train.returncode == 0, out + err
    assert (tmp_path / "run" / "config.json").is_file() and (tmp_path / "run" / "checkpoints").is_dir()

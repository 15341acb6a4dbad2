"""A small, valid wheel written with zipfile, for tests that run pip or open wheels offline
(`pip download --no-index --find-links DIR`): the install and fetch paths' hash checks."""
import base64
import hashlib
import os
import zipfile
from pathlib import Path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_wheel(folder: Path, name: str, version: str, files: dict) -> Path:
    """FOLDER/<name>-<version>-py3-none-any.whl holding FILES ({path in the wheel: bytes}) and
    its dist-info (METADATA, WHEEL, RECORD); the path of the wheel."""
    dist = f"{name.replace('-', '_')}-{version}"
    info = {f"{dist}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
            f"{dist}.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    contents = {**files, **info}
    def digest(data: bytes) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record = "".join(f"{path},sha256={digest(data)},{len(data)}\n"
                     for path, data in contents.items()) + f"{dist}.dist-info/RECORD,,\n"
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, data in contents.items():
            z.writestr(path, data)
        z.writestr(f"{dist}.dist-info/RECORD", record)
    return wheel


def offline_pip_env(wheels: Path) -> dict:
    """os.environ for a pip that reads WHEELS only: this machine's pip configuration, index
    and wheel folders left out."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
            "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

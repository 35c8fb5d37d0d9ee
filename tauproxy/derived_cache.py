"""Artefacts derived from files that rarely change, kept across processes in one diskcache directory.

A run starts by deriving things that are the same at every start: a pack's generated database
(`build_db(seed)` and its canonical JSON), τ²'s validated domain databases, τ²'s task catalog and the
prompts read from τ²'s sources. `cached(artefact, inputs, expected, build)` returns the stored value
when one exists for exactly these inputs, else builds it and stores it.

- **The key** is sha256 of canonical JSON over the artefact's name, the inputs the caller names
  (package versions, content hashes of the input files, seeds) and what every entry derives from:
  tauproxy's version, the Python version, the pickle protocol and `FORMAT_VERSION`. A changed input
  file is a new key, so a stale entry is never found (it ages out of the size limit). A file of 1 MB
  or more keeps its content hash here too, with its stat identity (device, inode, size, modification
  and change times, as git's index does); a later process whose file still has that identity uses it
  instead of reading and hashing the file again. A file changed less than 2 s before it was hashed
  keeps nothing (it may change again within the clock's granularity).
- **The value** is a pickle (validated objects load without validating again, about 3x faster than
  τ²'s `DB.load`), stored behind a checksum of the key and the pickle. An entry that does not match,
  does not unpickle or is not of the expected type is dropped and rebuilt, never believed.
- **The directory** is `$TAUPROXY_CACHE_DIR`, else `$XDG_CACHE_HOME/tauproxy`, else
  `~/.cache/tauproxy`; `TAUPROXY_CACHE_DIR=off` turns the cache off (every artefact is built).
  diskcache keeps its index in SQLite, so concurrent processes share the directory safely; one that
  cannot be opened (a file, no permission) means building, with one warning. `tauproxy cache clear`
  empties it. Only the user's own processes should write there: a pickle is code when it loads.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import pickle
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tauproxy.errors import ConfigError
from tauproxy.version import __version__

__all__ = [
    "CACHE_DIR_ENV",
    "CACHE_OFF",
    "FORMAT_VERSION",
    "CacheInfo",
    "cache_dir",
    "cache_info",
    "cached",
    "clear_cache",
    "files_digest",
]

CACHE_DIR_ENV = "TAUPROXY_CACHE_DIR"
CACHE_OFF = "off"  # TAUPROXY_CACHE_DIR=off: no cache, every artefact built
# Bumped whenever what an entry holds changes shape in a way the other inputs do not show.
FORMAT_VERSION = 1
SIZE_LIMIT = 2**30  # diskcache evicts the least recently stored entries past this (stale keys age out)
_PROTOCOL = pickle.HIGHEST_PROTOCOL
_MAGIC = b"tauproxy-derived\n"
_CHECKSUM_BYTES = 32

T = TypeVar("T")
_log = logging.getLogger(__name__)
_lock = threading.Lock()
_opened: dict[Path, Any] = {}  # directory -> diskcache.Cache, one per process
_warned: set[Path] = set()


def cache_dir() -> Path | None:
    """The cache directory, or None when `TAUPROXY_CACHE_DIR=off`."""
    configured = os.environ.get(CACHE_DIR_ENV, "").strip()
    if configured.lower() == CACHE_OFF:
        return None
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "tauproxy"


def files_digest(paths: Iterable[Path]) -> str:
    """sha256 over the names and bytes of `paths`, in the order given (a missing file counts as absent)."""
    digest = hashlib.sha256()
    for path in paths:
        file_digest = _file_digest(path)
        digest.update(str(path).encode() + b"\0" + (file_digest or b"-"))
    return digest.hexdigest()


# A file's stat identity: device, inode, size, modification and change times. Rewriting a file's
# bytes moves its change time, which, unlike the modification time, no program can set back.
_Identity = tuple[int, int, int, int, int]
# path -> (its stat identity, the sha256 of its bytes): a file read for two keys in one process (τ²'s
# airline db.json, 7 MB, is an input of the catalog and of the database) is hashed once.
_file_digests: dict[Path, tuple[_Identity, bytes]] = {}
_SETTLED_NS = 2_000_000_000
# Files at least this big keep their digest in the cache too, under `DIGEST_KEY_PREFIX` + path, with
# their stat identity: a later process that finds the file unchanged skips reading and hashing it
# (airline's db.json: about 10 ms at every start, against one lookup). Smaller files are hashed.
KEPT_DIGEST_BYTES = 1 << 20
DIGEST_KEY_PREFIX = "file-digest:"


def _file_digest(path: Path) -> bytes | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    if not path.is_file():
        return None
    identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    known = _file_digests.get(path)
    if known is not None and known[0] == identity:
        return known[1]
    kept = stat.st_size >= KEPT_DIGEST_BYTES
    store = _store() if kept else None
    found = _kept_digest(store, path, identity) if store is not None else None
    if found is not None:
        _file_digests[path] = (identity, found)
        return found
    try:
        content = path.read_bytes()
    except OSError:
        return None
    found = hashlib.sha256(content).digest()
    # As git does with racy index entries: a file changed in the last moments may change again within
    # the clock's granularity keeping its size and times, so only an older file's digest is kept.
    if time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) > _SETTLED_NS:
        _file_digests[path] = (identity, found)
        if store is not None:
            _keep_digest(store, path, identity, found)
    return found


def _kept_digest(store: Any, path: Path, identity: _Identity) -> bytes | None:
    """The digest kept for `path` if it was taken of the file as it is now (same stat identity)."""
    try:
        entry = store.get(DIGEST_KEY_PREFIX + str(path), default=None)
    except Exception as exc:
        _warn_once(Path(store.directory), exc)
        return None
    if not (isinstance(entry, tuple) and len(entry) == 2 and tuple(entry[0]) == identity):
        return None
    digest = entry[1]
    return digest if isinstance(digest, bytes) and len(digest) == hashlib.sha256().digest_size else None


def _keep_digest(store: Any, path: Path, identity: _Identity, digest: bytes) -> None:
    try:
        store.set(DIGEST_KEY_PREFIX + str(path), (identity, digest))
    except Exception as exc:
        _warn_once(Path(store.directory), exc)


def _key_text(artefact: str, inputs: Mapping[str, str | int]) -> str:
    return json.dumps(
        {
            "artefact": artefact,
            "inputs": dict(inputs),
            "format": FORMAT_VERSION,
            "tauproxy": __version__,
            "python": sys.version,
            "pickle": _PROTOCOL,
        },
        sort_keys=True,
    )


def cached(artefact: str, inputs: Mapping[str, str | int], expected: type[T], build: Callable[[], T]) -> T:
    """The artefact derived from `inputs`: the stored one if it checks out, else `build()` (then stored).

    `inputs` must name everything the artefact derives from besides tauproxy's and Python's versions
    (which every key has). An exception from `build` propagates and nothing is stored.
    """
    store = _store()
    if store is None:
        return build()
    key_text = _key_text(artefact, inputs)
    key = f"{artefact}:{hashlib.sha256(key_text.encode()).hexdigest()}"
    found = _read(store, key, key_text, expected)
    if found is not None:
        return found
    value = build()
    _write(store, key, key_text, value)
    return value


def _checksum(key_text: str, payload: bytes) -> bytes:
    return hashlib.sha256(key_text.encode() + b"\0" + payload).digest()


def _read(store: Any, key: str, key_text: str, expected: type[T]) -> T | None:
    try:
        blob = store.get(key, default=None)
    except Exception as exc:  # a damaged index: build, as with no cache
        _warn_once(Path(store.directory), exc)
        return None
    if blob is None:
        return None
    value = _unpack(blob, key_text, expected)
    if value is None:
        _drop(store, key)
    return value


def _unpack(blob: object, key_text: str, expected: type[T]) -> T | None:
    """The value inside a stored blob, or None if the blob is not exactly what `_write` stored."""
    head = len(_MAGIC) + _CHECKSUM_BYTES
    if not isinstance(blob, bytes) or len(blob) < head or not blob.startswith(_MAGIC):
        return None
    checksum, payload = blob[len(_MAGIC) : head], blob[head:]
    if checksum != _checksum(key_text, payload):
        return None
    # Unpickling builds tens of thousands of objects; the cyclic collector would run over all of
    # them again and again (half the load time), and none of them can be garbage yet.
    collecting = gc.isenabled()
    gc.disable()
    try:
        value = pickle.loads(payload)
    except Exception:  # a class that moved or changed since the entry was written
        return None
    finally:
        if collecting:
            gc.enable()
    return value if isinstance(value, expected) else None


def _write(store: Any, key: str, key_text: str, value: object) -> None:
    try:
        payload = pickle.dumps(value, protocol=_PROTOCOL)
    except Exception as exc:  # not picklable: a bug of the caller's, but the run goes on uncached
        _log.warning("tauproxy cache: %s not stored: %s", key.partition(":")[0], exc)
        return
    try:
        store.set(key, _MAGIC + _checksum(key_text, payload) + payload)
    except Exception as exc:  # a full disk, a read-only directory: the run goes on uncached
        _warn_once(Path(store.directory), exc)


def _drop(store: Any, key: str) -> None:
    try:
        store.delete(key)
    except Exception as exc:
        _warn_once(Path(store.directory), exc)


def _warn_once(directory: Path, exc: BaseException) -> None:
    if directory not in _warned:
        _warned.add(directory)
        _log.warning("tauproxy cache at %s not used: %s (set %s=off to silence)", directory, exc, CACHE_DIR_ENV)


def _open(directory: Path) -> Any:
    """The diskcache.Cache at `directory`, opened once per process; raises OSError or sqlite3.Error."""
    with _lock:
        store = _opened.get(directory)
        if store is None:
            import diskcache

            if directory.exists() and not directory.is_dir():
                raise NotADirectoryError(f"{directory} is not a directory")
            store = _opened[directory] = diskcache.Cache(str(directory), size_limit=SIZE_LIMIT)
        return store


def _store() -> Any:
    try:
        directory = cache_dir()
    except RuntimeError as exc:  # no home directory to put the default under
        _warn_once(Path("~/.cache/tauproxy"), exc)
        return None
    if directory is None:
        return None
    try:
        return _open(directory)
    except Exception as exc:
        _warn_once(directory, exc)
        return None


@dataclass(frozen=True)
class CacheInfo:
    """What `tauproxy cache info` prints."""

    directory: Path | None  # None: the cache is off
    entries: int
    size_bytes: int


def _open_for_command() -> tuple[Path | None, Any]:
    try:
        directory = cache_dir()
    except RuntimeError as exc:  # no home directory to put the default under
        raise ConfigError(f"no cache directory: {exc} (set {CACHE_DIR_ENV} to a directory, or to off)") from None
    if directory is None:
        return None, None
    try:
        return directory, _open(directory)
    except Exception as exc:
        where = (
            f"{CACHE_DIR_ENV}={directory}" if os.environ.get(CACHE_DIR_ENV, "").strip() else f"the cache {directory}"
        )
        raise ConfigError(
            f"{where} cannot be used: {exc} (set {CACHE_DIR_ENV} to another directory, or to off)"
        ) from None


def cache_info() -> CacheInfo:
    """The directory, its entry count and its size on disk (index and value files)."""
    directory, store = _open_for_command()
    if store is None:
        return CacheInfo(None, 0, 0)
    with _lock:
        return CacheInfo(directory, len(store), int(store.volume()))


def clear_cache() -> CacheInfo:
    """Remove every entry; returns what was there."""
    before = cache_info()
    _, store = _open_for_command()
    if store is not None:
        with _lock:
            store.clear()
    return before

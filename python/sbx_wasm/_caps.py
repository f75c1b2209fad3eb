"""The grant: what a run may touch. Made from a caps file, its text or a
dict with the same keys; checked when made; never changed after."""

from __future__ import annotations

import json
import os
from typing import Iterable, Mapping, Optional, Union

from . import _native


class Secret:
    """A value the guest must never read: an API key, a token.

    Its ``repr`` and ``str`` never show the value; the guest sees only a
    placeholder that the egress broker replaces in the declared headers of
    requests to the declared hosts.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str):
        if not isinstance(value, str):
            raise TypeError("a secret's value is a str")
        self._value = value

    def reveal(self) -> str:
        """The value (for the host's own use)."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("a Secret is not pickled")


class Caps:
    """A validated grant.

    - ``Caps.from_file(path)``: a caps file; relative host paths resolve
      against the file's folder.
    - ``Caps.from_toml(text)`` and ``Caps.from_dict(d)``: the same keys;
      relative host paths resolve against ``base`` (default: the current
      folder), as the command line does for ``--caps``.

    A grant that is not valid raises ``CapsError`` naming the key and the
    accepted form.
    """

    __slots__ = ("_native",)

    def __init__(self, native: "_native.NativeCaps"):
        self._native = native

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike]) -> "Caps":
        return cls(_native.NativeCaps.from_file(os.fspath(path)))

    @classmethod
    def from_toml(cls, text: str, base: Union[str, os.PathLike, None] = None) -> "Caps":
        return cls(_native.NativeCaps.from_toml(text, _base(base)))

    @classmethod
    def from_dict(cls, d: Mapping, base: Union[str, os.PathLike, None] = None) -> "Caps":
        try:
            text = json.dumps(d)
        except (TypeError, ValueError) as e:
            raise _native.CapsError(f"<dict>: not plain data: {e}") from None
        return cls(_native.NativeCaps.from_json(text, _base(base)))

    def with_secret(
        self,
        name: str,
        value: Union[str, Secret],
        hosts: Iterable[str],
        headers: Iterable[str] = ("Authorization",),
    ) -> "Caps":
        """This grant plus the secret ``name``: sent only to ``hosts`` (its
        egress rules' origins) and only in ``headers``."""
        raw = value.reveal() if isinstance(value, Secret) else value
        return Caps(self._native.with_secret(name, raw, list(hosts), list(headers)))

    def with_write_mount(self, host: Union[str, os.PathLike], guest: str) -> "Caps":
        """This grant plus a write mount of the host folder ``host`` at ``guest``."""
        return Caps(self._native.with_write_mount(os.fspath(host), guest))

    def with_tools(self, names: Iterable[str]) -> "Caps":
        """This grant plus the tools ``names`` on its allow-list."""
        return Caps(self._native.with_tools(list(names)))

    @property
    def tools(self) -> list[str]:
        """Tool names the grant allows."""
        return self._native.tools()

    @property
    def secret_names(self) -> list[str]:
        return self._native.secret_names()

    @property
    def warnings(self) -> list[str]:
        return self._native.warnings()

    def to_toml(self) -> str:
        """The grant as a caps file (secrets by where they come from, never
        their values)."""
        return self._native.to_toml()

    def room_for_model(self, tools: Optional[Iterable[str]] = None) -> str:
        """What a model should be told of its room: folders, origins,
        tools, limits."""
        return self._native.room_for_model(list(tools if tools is not None else self.tools))

    def __repr__(self) -> str:
        return repr(self._native)


def _base(base: Union[str, os.PathLike, None]) -> str:
    return os.fspath(base) if base is not None else os.getcwd()

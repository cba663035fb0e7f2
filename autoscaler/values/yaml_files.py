"""Reading YAML files with errors a person can act on (never a traceback).

Every file the command line reads (a scenario, a target, a targets file, the settings, a kubeconfig)
goes through :func:`load_yaml_file` or :func:`load_yaml_documents`, which read the data model JSON has, as
Kubernetes does: objects with string keys, lists, strings, numbers, booleans and null. Anything else
is refused with its line and column (binary data, sets, a key that is not a string, a key written
twice), and so is a file that breaks the limits of :mod:`autoscaler.values.limits` (its size, its
nesting, its number of values with aliases written out) or is not UTF-8. A date stays the string it
was written as.
"""

from __future__ import annotations

import sys
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode

from autoscaler.values.fields import ErrorList, FieldError, SpecError, type_name
from autoscaler.values.limits import MAX_DEPTH, MAX_FILE_BYTES, check_document

_MERGE_TAG = "tag:yaml.org,2002:merge"


class DocumentLoader(yaml.SafeLoader):
    """PyYAML's safe loader, kept to the JSON data model and to :data:`MAX_DEPTH` levels of nesting."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        # The composer recurses once per level: refuse depth before Python's stack runs out.
        nested = self.check_event(yaml.MappingStartEvent, yaml.SequenceStartEvent)
        if nested:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise ComposerError(
                    None,
                    None,
                    f"nested too deeply: more than {MAX_DEPTH} levels of objects and lists",
                    self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )
        try:
            return super().compose_node(parent, index)
        finally:
            if nested:
                self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, MappingNode):
            raise ConstructorError(None, None, f"expected a mapping node, but found {node.id}", node.start_mark)
        own = {id(key) for key, _ in node.value if key.tag != _MERGE_TAG}
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                hint = " (quote it)" if isinstance(key_node, ScalarNode) else ""
                raise ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    f"a key must be a string, not {type_name(key)}{hint}",
                    key_node.start_mark,
                )
            if id(key_node) in own:
                if key in first_line:
                    raise ConstructorError(
                        "while reading a mapping",
                        node.start_mark,
                        f'duplicate key "{key:.80}" (first at line {first_line[key]})',
                        key_node.start_mark,
                    )
                first_line[key] = key_node.start_mark.line + 1
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_int(self, node: ScalarNode) -> int:
        if sum(c.isdigit() for c in str(node.value)) > sys.get_int_max_str_digits():  # Python would refuse
            raise ConstructorError(
                None, None, f"integer too long: more than {sys.get_int_max_str_digits()} digits", node.start_mark
            )
        return self._of_tag(node, super().construct_yaml_int)  # type: ignore[no-any-return]

    def construct_yaml_float(self, node: ScalarNode) -> float:
        return self._of_tag(node, super().construct_yaml_float)  # type: ignore[no-any-return]

    def construct_yaml_bool(self, node: ScalarNode) -> bool:
        return self._of_tag(node, super().construct_yaml_bool)  # type: ignore[no-any-return]

    @staticmethod
    def _of_tag(node: ScalarNode, construct: Any) -> Any:
        """A value under an explicit tag it does not fit (``!!float ""``, ``!!bool maybe``, ``!!int 0b``)
        makes PyYAML's constructors raise IndexError, KeyError or ValueError: an error at the value here."""
        try:
            return construct(node)
        except (ValueError, IndexError, KeyError):
            raise ConstructorError(
                None, None, f"{node.value!r:.40} is not a valid {node.tag.rsplit(':', 1)[-1]}", node.start_mark
            ) from None

    def construct_as_text(self, node: ScalarNode) -> str:
        """A date or time stays the text it was written as (as JSON, and Kubernetes, have no dates)."""
        return str(self.construct_scalar(node))

    def refuse(self, node: Node) -> Any:
        names = {
            "tag:yaml.org,2002:binary": "binary data (!!binary)",
            "tag:yaml.org,2002:set": "a set (!!set)",
            "tag:yaml.org,2002:omap": "an ordered map (!!omap)",
            "tag:yaml.org,2002:pairs": "pairs (!!pairs)",
        }
        raise ConstructorError(
            None,
            None,
            f"{names.get(node.tag, node.tag)} is not supported: use text, lists and objects",
            node.start_mark,
        )


DocumentLoader.add_constructor("tag:yaml.org,2002:int", DocumentLoader.construct_yaml_int)
DocumentLoader.add_constructor("tag:yaml.org,2002:float", DocumentLoader.construct_yaml_float)
DocumentLoader.add_constructor("tag:yaml.org,2002:bool", DocumentLoader.construct_yaml_bool)
DocumentLoader.add_constructor("tag:yaml.org,2002:timestamp", DocumentLoader.construct_as_text)
for _tag in ("binary", "set", "omap", "pairs"):
    DocumentLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", DocumentLoader.refuse)


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SpecError([FieldError(path, f"cannot read file: {exc.strerror or exc}")]) from exc
    if len(data) > MAX_FILE_BYTES:
        raise SpecError([FieldError(path, f"file too large: more than {MAX_FILE_BYTES // (1024 * 1024)} MiB")])
    return decode_text(data, path)


def decode_text(data: bytes, source: str) -> str:
    """``data`` as UTF-8 (a byte-order mark allowed); :class:`SpecError` says where it is not."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        raise SpecError(
            [
                FieldError(
                    source,
                    f"not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line}, "
                    f"column {column} (save the file as UTF-8)",
                )
            ]
        ) from None


def parse_yaml_documents(text: str, source: str, *, separate: bool) -> list[Any]:
    """Every document of ``text`` (``---`` separated; empty ones skipped), each checked against the limits.

    The paths of limit errors start at the document (``spec.hvpa``), or with ``separate`` at the file and
    the document's index in it (``targets.yaml[2].spec.hvpa``), as a file of several objects reports."""
    documents: list[Any] = []
    try:
        loader = DocumentLoader(text)  # which refuses control characters at once
        try:
            while loader.check_data():  # type: ignore[no-untyped-call]
                document = loader.get_data()
                if document is not None:
                    documents.append(document)
        finally:
            loader.dispose()
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        raise SpecError(
            [
                FieldError(
                    source,
                    f"invalid YAML at line {line}, column {column}: character #x{exc.character:04x} is not allowed",
                )
            ]
        ) from None
    except yaml.YAMLError as exc:
        raise SpecError([FieldError(source, yaml_problem(exc))]) from None
    errors = ErrorList()
    for index, document in enumerate(documents):
        check_document(document, f"{source}[{index}]" if separate else "", errors)
    if errors:
        raise SpecError([FieldError(source if e.path == "(document)" else e.path, e.message) for e in errors.items])
    return documents


def load_yaml_file(path: str) -> Any:
    """One YAML document (None for an empty file); ``SpecError`` when the file cannot be read or parsed."""
    return parse_yaml_text(_read_text(path), path)


def parse_yaml_text(text: str, source: str) -> Any:
    """The one YAML document of ``text`` (None when empty), from ``source`` (a file, a variable)."""
    documents = parse_yaml_documents(text, source, separate=False)
    if len(documents) > 1:
        raise SpecError([FieldError(source, f"{len(documents)} YAML documents: expected one")])
    return documents[0] if documents else None


def load_yaml_documents(path: str) -> list[Any]:
    """Every document of a multi-document YAML file (``---`` separated), empty ones skipped."""
    return parse_yaml_documents(_read_text(path), path, separate=True)


def yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return f"invalid YAML{where}: {problem}"


# PyYAML writes these raw with allow_unicode, and reads a raw one back as a line break folded into a
# space: a string that holds one is written double-quoted, where they are escapes (\N, \L, \P).
_UNICODE_BREAKS = frozenset("\x85\u2028\u2029")


class _Dumper(yaml.SafeDumper):
    """The safe dumper; a multi-line string as a literal block, one with a Unicode line break quoted."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if not _UNICODE_BREAKS.isdisjoint(value):
        style: str | None = '"'
    else:
        style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def dump_yaml(document: Any) -> str:
    """``document`` as YAML a person reads (keys in their order, non-ASCII text as it is, queries over
    several lines as blocks) that :func:`parse_yaml_text` reads back to exactly ``document``."""
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True)

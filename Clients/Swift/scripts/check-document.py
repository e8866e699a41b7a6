#!/usr/bin/env python3
"""The rules that keep deploy/openapi/openapi.yaml a document the Swift client can be generated
from without losing anything, and that keep a newer server from breaking an older app:

- no `oneOf`/`anyOf` branch `type: 'null'` (the generator drops the whole property): a nullable
  reference is `$ref` with `type: [object, 'null']` beside it, its target without `type`;
- every schema with `items` says `type: array`, every `const` its `type`;
- nothing a response can hold is closed: no `additionalProperties: false` and no bare `enum`
  (an enum a response holds is open: `anyOf: [{type: string, enum: [...]}, {type: string}]`).

Usage: check-document.py deploy/openapi/openapi.yaml (exits 1 naming each problem).
"""
import sys

import yaml


def walk(node, path, visit):
    if isinstance(node, dict):
        visit(node, path)
        for key, value in node.items():
            walk(value, path + [str(key)], visit)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            walk(value, path + [str(index)], visit)


def main(document_path):
    document = yaml.safe_load(open(document_path, encoding="utf-8"))
    schemas = document.get("components", {}).get("schemas", {})
    problems = []

    def shape(node, path):
        where = "/".join(path)
        for key in ("oneOf", "anyOf"):
            for branch in node.get(key, []) if isinstance(node.get(key), list) else []:
                if isinstance(branch, dict) and branch.get("type") in ("null", ["null"]):
                    problems.append(f"{where}: a `{key}` branch `type: 'null'` (use `$ref` beside `type: [object, 'null']`)")
        if "items" in node and path and path[-1] != "properties" and "array" not in _types(node):
            problems.append(f"{where}: `items` without `type: array`")
        if "const" in node and "type" not in node:
            problems.append(f"{where}: `const` without its `type`")

    walk(document, [], shape)

    # What responses can hold: every schema reachable from a response, through references.
    reachable, seen = [], set()

    def collect(node, path):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[1]
                if name not in seen:
                    seen.add(name)
                    collect(schemas[name], ["components", "schemas", name])
            reachable.append((node, path))
            for key, value in node.items():
                if key != "$ref":
                    collect(value, path + [key])
        elif isinstance(node, list):
            for index, value in enumerate(node):
                collect(value, path + [str(index)])

    responses = document.get("components", {}).get("responses", {})
    for name, response in responses.items():
        collect(response.get("content", {}), ["components", "responses", name])
    for route, item in document.get("paths", {}).items():
        for method, operation in item.items():
            if isinstance(operation, dict):
                for status, response in operation.get("responses", {}).items():
                    collect(response.get("content", {}), ["paths", route, method, status])

    for node, path in reachable:
        where = "/".join(path)
        if node.get("additionalProperties") is False:
            problems.append(f"{where}: `additionalProperties: false` in what a response holds")
        if "enum" in node and not _open_branch(path, document):
            problems.append(f"{where}: a closed `enum` in what a response holds (make it open with `anyOf`)")

    for problem in sorted(set(problems)):
        print(f"{document_path}: {problem}", file=sys.stderr)
    if problems:
        print(f"{len(set(problems))} problem(s)", file=sys.stderr)
        return 1
    print(f"{document_path}: the client rules hold")
    return 0


def _types(node):
    kind = node.get("type")
    return kind if isinstance(kind, list) else [kind]


def _open_branch(path, document):
    """Whether the enum at `path` is the first branch of an `anyOf` whose other branch is any string."""
    if len(path) < 2 or path[-2] != "anyOf":
        return False
    parent = document
    for key in path[:-2]:
        parent = parent[int(key)] if isinstance(parent, list) else parent[key]
    return any(branch == {"type": "string"} for branch in parent["anyOf"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "deploy/openapi/openapi.yaml"))

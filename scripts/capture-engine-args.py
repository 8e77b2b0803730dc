#!/usr/bin/env python3
"""Capture the command-line arguments of an LLM serving engine as a JSON fixture.

The lists under scenarios/engines/ (raw dumps in tests/deploy/fixtures/) let
`dayzero export` and the tests check that every flag DayZero emits exists in
the engine and takes the kind of value it passes, and let `dayzero import` read
a command line as the engine would (scenarios/engines/README.md).

Usage (standard library only; run it with the engine's own interpreter):

  # vLLM: builds the real `vllm serve` parser (ServeSubcommand.subparser_init)
  /path/to/venv/bin/python scripts/capture-engine-args.py vllm \
      --out scenarios/engines/vllm-0.18.0.json

  # SGLang: builds the real `python -m sglang.launch_server` parser
  # (ServerArgs.add_cli_args)
  /path/to/venv/bin/python scripts/capture-engine-args.py sglang \
      --out scenarios/engines/sglang-0.5.8.json

  # TensorRT-LLM: no import needed; parses the source with `ast`.  SRC is a
  # directory that contains tensorrt_llm/ (an unpacked wheel or a checkout).
  python3 scripts/capture-engine-args.py trtllm-ast SRC \
      --out scenarios/engines/trtllm-1.3.0rc3.json

Options: --vllm-platform cuda|cpu (vllm on a host without a GPU: pin
vllm.platforms.current_platform so the parser can be built), --out FILE (JSON; default stdout), --raw FILE (raw dump; default
FILE with .json replaced by .raw.txt: move it to tests/deploy/fixtures/), --captured DATE, --how TEXT (appended
to the generated description of the method).

Fixture shape: {"engine", "version", "command", "captured", "how", "flags":
{"--flag": {"value": KIND, "dest": ..., ...}}} where KIND is none (switch),
int, float, string, json, choice (with "choices"), or bool, and "dest" the
argparse setting the flag writes (aliases share it).  Extra keys: "nargs" for
list-valued flags, "deprecated", "multiple" (click), "note".  trtllm adds
"commands" (per click subcommand) and "yaml" (LlmArgs fields for
--extra_llm_api_options, dotted one level into nested config classes).
"""
import argparse
import ast
import datetime
import json
import os
import platform
import sys

# ----------------------------------------------------------------- argparse


def _type_kind(fn, depth=0):
    """Map an argparse `type=` callable to a value kind."""
    if fn is None or fn is str:
        return "string"
    if fn is int:
        return "int"
    if fn is float:
        return "float"
    if fn is bool:
        return "bool"
    if fn is json.loads:
        return "json"
    name = getattr(fn, "__name__", type(fn).__name__)
    if name in ("loads", "parse_dataclass", "union_dict_and_str",
                "json_list_type"):
        return "json"
    if name.startswith("human_readable_int"):
        return "int"
    if name in ("str2bool", "strtobool"):
        return "bool"
    if name in ("nullable_str",):
        return "string"
    # Wrappers such as vLLM's optional_type(int) / parse_type(json.loads):
    # look at what they close over.
    for cell in (getattr(fn, "__closure__", None) or ()):
        inner = cell.cell_contents
        if callable(inner) and depth < 4:
            return _type_kind(inner, depth + 1)
    return "string"


def _action_entry(a):
    if a.nargs == 0:
        e = {"value": "none"}
    elif a.choices is not None:
        e = {"value": "choice", "choices": [str(c) for c in a.choices]}
    else:
        e = {"value": _type_kind(a.type)}
        tn = getattr(a.type, "__name__", "")
        if tn.startswith("human_readable_int"):
            e["note"] = "also accepts 1k/1M-style suffixes" + \
                (" and 'auto'" if tn.endswith("auto") else "")
        elif tn == "union_dict_and_str":
            e["note"] = "plain string or JSON object"
    if a.nargs not in (None, 0):
        e["nargs"] = str(a.nargs)
    if type(a).__name__ == "DeprecatedAction" or getattr(a, "deprecated", False):
        e["deprecated"] = True
    return e


def _raw_line(a):
    t = a.type
    tname = None if t is None else getattr(t, "__qualname__", repr(t))
    choices = None if a.choices is None else [str(c) for c in a.choices]
    default = a.default if isinstance(a.default, (int, float, str, bool, type(None))) \
        else repr(a.default)
    return json.dumps({"option_strings": a.option_strings, "dest": a.dest,
                       "action": type(a).__name__, "nargs": a.nargs,
                       "type": tname, "choices": choices, "default": default})


def dump_parser(parser):
    flags, raw, positionals = {}, [], []
    for a in parser._actions:
        raw.append(_raw_line(a))
        if not a.option_strings:
            positionals.append(a.dest)
            continue
        for opt in a.option_strings:
            flags[opt] = dict(_action_entry(a), dest=a.dest)  # aliases share it
    return flags, positionals, raw


def capture_vllm(platform_name=None):
    import vllm
    if platform_name:  # no GPU on the capturing host: pin the platform
        import importlib
        import vllm.platforms
        mod, cls = {"cuda": ("vllm.platforms.cuda", "CudaPlatform"),
                    "cpu": ("vllm.platforms.cpu", "CpuPlatform")}[platform_name]
        vllm.platforms.current_platform = getattr(importlib.import_module(mod), cls)()
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    top = FlexibleArgumentParser(prog="vllm")
    sub = top.add_subparsers()
    parser = ServeSubcommand().subparser_init(sub)
    flags, pos, raw = dump_parser(parser)
    return {"engine": "vllm", "version": vllm.__version__,
            "command": "vllm serve", "positionals": pos,
            "how": "argparse dump of vllm.entrypoints.cli.serve."
                   "ServeSubcommand().subparser_init() (the parser `vllm serve`"
                   " uses), walking parser._actions%s. vLLM also accepts "
                   "underscores for dashes in flag names." % (
                       "; vllm.platforms.current_platform pinned to %s (no GPU)"
                       % platform_name if platform_name else "")}, flags, raw


def capture_sglang():
    import sglang
    from sglang.srt.server_args import ServerArgs
    parser = argparse.ArgumentParser(prog="sglang.launch_server")
    ServerArgs.add_cli_args(parser)
    flags, pos, raw = dump_parser(parser)
    return {"engine": "sglang", "version": sglang.__version__,
            "command": "python -m sglang.launch_server", "positionals": pos,
            "how": "argparse dump of sglang.srt.server_args.ServerArgs."
                   "add_cli_args(argparse.ArgumentParser()) (what "
                   "prepare_server_args uses), walking parser._actions."}, \
        flags, raw

# ------------------------------------------------------------ TensorRT-LLM


def _lit(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    if isinstance(node, ast.Call):
        return _dotted(node.func) + "(...)"
    if isinstance(node, ast.Subscript):
        return _dotted(node.value) + "[...]"
    return ast.unparse(node)


def _click_option(call):
    names = [a.value for a in call.args
             if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    kw = {k.arg: k.value for k in call.keywords}
    e = {}
    if kw.get("is_flag") is not None and _lit(kw["is_flag"]):
        e["value"] = "none"
    elif "type" in kw:
        t = kw["type"]
        tn = _dotted(t.func if isinstance(t, ast.Call) else t)
        if isinstance(t, ast.Call) and tn.split(".")[-1] in ("Choice", "ChoiceWithAlias"):
            choices = _lit(t.args[0]) if t.args else None
            e["value"] = "choice"
            if isinstance(choices, (list, tuple)):
                e["choices"] = [str(c) for c in choices]
                if len(t.args) > 1 and isinstance(_lit(t.args[1]), dict):
                    e["choices"] += [str(k) for k in _lit(t.args[1])]
            else:
                e["choices_from"] = ast.unparse(t.args[0])
                e["note"] = "choices computed at runtime; not resolved statically"
        else:
            base = tn.split(".")[-1]
            e["value"] = {"int": "int", "INT": "int", "float": "float",
                          "FLOAT": "float", "bool": "bool", "BOOL": "bool",
                          "IntRange": "int", "FloatRange": "float"}.get(base, "string")
    else:
        d = _lit(kw["default"]) if "default" in kw else None
        e["value"] = ("bool" if isinstance(d, bool) else "int" if isinstance(d, int)
                      else "float" if isinstance(d, float) else "string")
    if "multiple" in kw and _lit(kw["multiple"]):
        e["multiple"] = True
    flags = {}
    for n in names:
        for part in n.split("/"):  # click "--x/--no-x" secondary switches
            part = part.strip()
            if part.startswith("-"):
                flags[part] = dict(e, value="none") if "/" in n else dict(e)
    return flags


def _click_commands(tree):
    cmds = {}
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        name, flags, args = None, {}, []
        for dec in fn.decorator_list:
            if not isinstance(dec, ast.Call):
                continue
            d = _dotted(dec.func)
            if d.endswith(".command"):
                name = _lit(dec.args[0]) if dec.args else fn.name
            elif d.endswith(".option"):
                flags.update(_click_option(dec))
            elif d.endswith(".argument"):
                args.append(_lit(dec.args[0]))
        if name:
            cmds[name] = {"positionals": args, "flags": dict(sorted(flags.items()))}
    return cmds


class _Models:
    """Pydantic model classes and type aliases of one module, read with ast."""

    def __init__(self, tree):
        self.classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
        self.aliases = {}
        for n in tree.body:
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value:
                self.aliases[n.target.id] = n.value
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and \
                    isinstance(n.targets[0], ast.Name):
                self.aliases[n.targets[0].id] = n.value

    def bases(self, name):
        return [_dotted(b) for b in self.classes[name].bases]

    def is_enum(self, name):
        seen = [name]
        while seen:
            c = seen.pop()
            if c in ("Enum", "StrEnum", "IntEnum"):
                return True
            if c in self.classes:
                seen += self.bases(c)
        return False

    def enum_values(self, name):
        vals = []
        for n in self.classes[name].body:
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
                v = _lit(n.value)
                vals.append(str(v if v is not None else n.targets[0].id))
        return vals

    def fields(self, name):
        """{field: annotation} including inherited fields, in order."""
        out = {}
        for b in reversed(self.bases(name)):
            if b in self.classes:
                out.update(self.fields(b))
        for n in self.classes[name].body:
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                if n.target.id.startswith("_") or "ClassVar" in ast.unparse(n.annotation):
                    continue
                out[n.target.id] = n.annotation
        return out

    def classvar(self, name, attr):
        for n in self.classes[name].body:
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) \
                    and n.target.id == attr and n.value is not None:
                return _lit(n.value)
        return None

    def members(self, ann, depth=0):
        """Flatten Optional/Union/aliases into a list of leaf annotations."""
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            ann = ast.parse(ann.value, mode="eval").body
        if isinstance(ann, ast.Name) and ann.id in self.aliases and depth < 5:
            return self.members(self.aliases[ann.id], depth + 1)
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            return self.members(ann.left, depth) + self.members(ann.right, depth)
        if isinstance(ann, ast.Subscript) and _dotted(ann.value).split(".")[-1] in ("Optional", "Union"):
            sl = ann.slice
            items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
            return [m for i in items for m in self.members(i, depth)]
        if isinstance(ann, ast.Constant) and ann.value is None:
            return []
        return [ann]

    def kind(self, ann):
        """(entry, [nested config classes])"""
        leaves = self.members(ann)
        classes = [ast.unparse(l) for l in leaves if ast.unparse(l) in self.classes
                   and not self.is_enum(ast.unparse(l))]
        if classes:
            return {"value": "object", "type": " | ".join(classes)}, classes
        choices, kinds = [], []
        for l in leaves:
            s = ast.unparse(l)
            head = _dotted(l.value).split(".")[-1] if isinstance(l, ast.Subscript) else s
            if head == "Literal":
                sl = l.slice
                choices += [str(_lit(e)) for e in (sl.elts if isinstance(sl, ast.Tuple) else [sl])]
            elif s in self.classes and self.is_enum(s):
                choices += self.enum_values(s)
            else:
                kinds.append({"int": "int", "float": "float", "bool": "bool", "str": "string",
                              "Path": "string", "List": "list", "list": "list",
                              "Dict": "dict", "dict": "dict", "Tuple": "list",
                              "tuple": "list", "Set": "list", "set": "list",
                              "PositiveInt": "int", "NonNegativeInt": "int",
                              "NonNegativeFloat": "float", "PositiveFloat": "float"
                              }.get(head.split(".")[-1], "string"))
        if choices and not kinds:
            return {"value": "choice", "choices": choices}, []
        e = {"value": kinds[0] if len(set(kinds)) == 1 else
             ("float" if set(kinds) == {"int", "float"} else "string")}
        if choices:
            e["choices"] = choices
        if len(set(kinds)) > 1 or choices:
            e["type"] = ast.unparse(ann)
        return e, []


def capture_trtllm_ast(src):
    pkg = os.path.join(src, "tensorrt_llm")
    read = lambda p: ast.parse(open(os.path.join(pkg, p)).read())
    version = _lit(read("version.py").body[-1].value)
    cmds = _click_commands(read("commands/serve.py"))
    m = _Models(read("llmapi/llm_args.py"))
    root = "TorchLlmArgs"
    yaml, raw = {}, []
    for field, ann in m.fields(root).items():
        e, nested = m.kind(ann)
        yaml[field] = e
        raw.append("%s.%s: %s" % (root, field, ast.unparse(ann)))
        for cls in nested:
            for sub, sann in m.fields(cls).items():
                se, _ = m.kind(sann)
                key = field + "." + sub
                raw.append("  %s (%s): %s" % (key, cls, ast.unparse(sann)))
                if key in yaml and yaml[key] != se:
                    yaml[key].setdefault("also", []).append(se)
                else:
                    yaml.setdefault(key, se)
            dt = m.classvar(cls, "decoding_type")
            if dt is not None:
                yaml.setdefault(field + ".decoding_type", {"value": "choice", "choices": []})
    # decoding_type values accepted by DecodingBaseConfig.from_dict
    for node in ast.walk(m.classes.get("DecodingBaseConfig", ast.Module(body=[]))):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and \
                getattr(node.targets[0], "id", "") == "config_classes":
            keys = [str(_lit(k)) for k in node.value.keys]
            for f, e in yaml.items():
                if f.endswith(".decoding_type"):
                    e["choices"] = keys
    for name, c in cmds.items():
        for fl, e in c["flags"].items():
            raw.append("%s %s %s" % (name, fl, json.dumps(e)))
    serve = cmds.get("serve", {"flags": {}, "positionals": []})
    meta = {"engine": "trtllm", "version": version, "command": "trtllm-serve",
            "positionals": serve["positionals"],
            "how": "static AST parse (python ast) of tensorrt_llm/commands/serve.py "
                   "(click options of each @click.command) and "
                   "tensorrt_llm/llmapi/llm_args.py (pydantic fields of %s incl. "
                   "BaseLlmArgs, one level into nested config classes); package "
                   "not imported." % root}
    extra = {"commands": cmds, "yaml": dict(sorted(yaml.items()))}
    return meta, serve["flags"], raw, extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("engine", choices=["vllm", "sglang", "trtllm-ast"])
    ap.add_argument("src", nargs="?", help="trtllm-ast: dir containing tensorrt_llm/")
    ap.add_argument("--out")
    ap.add_argument("--raw")
    ap.add_argument("--captured", default=datetime.date.today().isoformat())
    ap.add_argument("--how", default="")
    ap.add_argument("--vllm-platform", choices=["cuda", "cpu"],
                    help="vllm: set current_platform when no GPU is present")
    a = ap.parse_args()
    extra = {}
    if a.engine == "vllm":
        meta, flags, raw = capture_vllm(a.vllm_platform)
    elif a.engine == "sglang":
        meta, flags, raw = capture_sglang()
    else:
        meta, flags, raw, extra = capture_trtllm_ast(a.src)
    how = "%s Run by scripts/capture-engine-args.py %s under Python %s (%s)." % (
        meta.pop("how"), a.engine, platform.python_version(), sys.executable)
    if a.how:
        how += " " + a.how
    doc = {"engine": meta["engine"], "version": meta["version"],
           "command": meta["command"], "captured": a.captured, "how": how,
           "positionals": meta["positionals"], "flags": dict(sorted(flags.items()))}
    doc.update(extra)
    text = json.dumps(doc, indent=1, sort_keys=False) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
        raw_path = a.raw or a.out[:-5] + ".raw.txt"
        with open(raw_path, "w") as f:
            f.write("# raw capture: %s\n" % how)
            f.write("\n".join(raw) + "\n")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""fm_model_server: a scripted loopback model server for driving real agent TUIs.

Speaks enough of the Anthropic Messages API (Claude Code) and the OpenAI
Responses API (Codex CLI) for an agent to start, take turns, run one or more
shell tool calls and answer, all offline. Standard library only.

    fm_model_server.py [--port N] [--max-secs S] [--log FILE] [--script FILE]

Prints `port=N` as its first stdout line (flushed), then serves on 127.0.0.1
until --max-secs have passed (default 600) or it gets SIGTERM/SIGINT.
Every request is appended to --log as one JSON line (see README.md).
The script (JSON) is re-read on every request, so a test may rewrite it
between turns. Rule format: README.md.
"""

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG_LOCK = threading.Lock()
COUNTER_LOCK = threading.Lock()
COUNTER = [0]
STATE = {"log": None, "script": None, "started": time.time()}

DEFAULT_SCRIPT = {"default": {"text": "ok"}, "rules": []}
SHELL_TOOLS = ("exec_command", "shell_command", "shell", "local_shell")


def next_id(prefix):
    with COUNTER_LOCK:
        COUNTER[0] += 1
        return "%s_fm%06d" % (prefix, COUNTER[0])


def log_record(rec):
    path = STATE["log"]
    if not path:
        return
    line = json.dumps(rec, ensure_ascii=False, sort_keys=True)
    with LOG_LOCK:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def load_script():
    path = STATE["script"]
    if not path:
        return DEFAULT_SCRIPT
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write("fm_model_server: bad script %s: %s\n" % (path, e))
        return DEFAULT_SCRIPT


# --------------------------------------------------------------------------
# What the agent asked: the prompt (last real user turn) and how many tool
# results came back since it.


SYNTHETIC_PREFIXES = (
    "<system-reminder>",
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<command-name>",
    "<local-command",
    "[Request interrupted by user",
)


def is_synthetic(text):
    return text.lstrip().startswith(SYNTHETIC_PREFIXES)


def anthropic_turns(body):
    """User turns of a Messages request: list of (texts, tool_results)."""
    turns = []
    for m in body.get("messages") or []:
        if m.get("role") != "user":
            continue
        c = m.get("content")
        texts, results = [], 0
        if isinstance(c, str):
            texts.append(c)
        elif isinstance(c, list):
            for b in c:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text":
                    texts.append(b.get("text") or "")
                elif b.get("type") == "tool_result":
                    results += 1
        turns.append((texts, results))
    return turns


def openai_turns(body):
    """User turns of a Responses request, tool outputs counted per turn."""
    turns = []
    inp = body.get("input")
    if isinstance(inp, str):
        return [([inp], 0)]
    for it in inp or []:
        if not isinstance(it, dict):
            continue
        t = it.get("type")
        if t in (None, "message") and it.get("role") == "user":
            c = it.get("content")
            texts = []
            if isinstance(c, str):
                texts.append(c)
            else:
                for b in c or []:
                    if isinstance(b, dict) and b.get("type") in ("input_text", "text"):
                        texts.append(b.get("text") or "")
            turns.append((texts, 0))
        elif t in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            if turns:
                texts, n = turns[-1]
                turns[-1] = (texts, n + 1)
            else:
                turns.append(([], 1))
    return turns


def prompt_and_steps(turns):
    """The last user turn that carries real text, and the tool results since."""
    steps = 0
    for texts, results in reversed(turns):
        real = [t for t in texts if not is_synthetic(t)]
        steps += results
        if real:
            return "\n".join(t.rstrip("\n") for t in real), steps
    return "", steps


def raw_prompt_and_steps(turns, results_follow):
    """The last user message that carries text, synthetic blocks included
    (all its text blocks joined), and the tool results since. A message
    that returns tool results continues a turn and is passed over
    (Anthropic's `tool_result` messages); with `results_follow` a turn's
    count is of the results after it (Responses)."""
    steps = 0
    for texts, results in reversed(turns):
        steps += results
        if texts and (results_follow or not results):
            return "\n".join(t.rstrip("\n") for t in texts), steps
    return "", steps


def user_turn_texts(turns):
    """Every user turn that carries real text, as its list of text blocks
    (synthetic blocks left out), for the log."""
    out = []
    for texts, _ in turns:
        real = [t for t in texts if not is_synthetic(t)]
        if real:
            out.append(real)
    return out


def choose_action(prompt, api, is_main, script, raw=""):
    """The first rule that holds, its action, its label, and whether it
    matched the raw prompt (`"raw": true`)."""
    for rule in script.get("rules") or []:
        text = raw if rule.get("raw") else prompt
        if rule.get("api") not in (None, "any", api):
            continue
        # Rules answer the agent's main loop; `"side": true` rules answer only
        # side requests (title generation and the like: no tools offered).
        if bool(rule.get("side", False)) == is_main:
            continue
        if "match" in rule and rule["match"] not in text:
            continue
        groups = ()
        if "regex" in rule:
            m = re.search(rule["regex"], text, re.S)
            if not m:
                continue
            groups = m.groups()
        action = substitute(rule.get("action") or {}, text, groups)
        name = rule.get("name") or rule.get("match") or rule.get("regex")
        return action, name, bool(rule.get("raw"))
    if not is_main:
        return script.get("side_default") or {"text": "ok"}, "side_default", False
    return script.get("default") or {"text": "ok"}, "default", False


def substitute(obj, prompt, groups):
    """`{prompt}` and `{1}`, `{2}` … (regex groups) in every string of an action."""
    if isinstance(obj, str):
        out = obj.replace("{prompt}", prompt)
        for i, g in enumerate(groups, 1):
            out = out.replace("{%d}" % i, g or "")
        return out
    if isinstance(obj, list):
        return [substitute(x, prompt, groups) for x in obj]
    if isinstance(obj, dict):
        return {k: substitute(v, prompt, groups) for k, v in obj.items()}
    return obj


def current_step(action, steps):
    """An action is a text reply, or a list of `steps` (tool calls, then text)."""
    seq = action.get("steps")
    if not seq:
        if "tool" in action or "command" in action:
            seq = [action, {"text": action.get("then", "done")}]
        else:
            seq = [action]
    return seq[min(steps, len(seq) - 1)]


# --------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fm-model-server/1"

    def log_message(self, fmt_, *args):  # quiet
        pass

    # -- plumbing ---------------------------------------------------------
    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self.read_chunked()
        if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
            import gzip
            raw = gzip.decompress(raw)
        return raw

    def read_chunked(self):
        out = b""
        while True:
            line = self.rfile.readline().strip()
            size = int(line.split(b";")[0], 16)
            if size == 0:
                self.rfile.readline()
                return out
            out += self.rfile.read(size)
            self.rfile.readline()

    def send_json(self, code, obj, extra=None):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def start_sse(self, extra=None):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()

    def chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def sse(self, event, obj):
        self.chunk(("event: %s\ndata: %s\n\n" % (event, json.dumps(obj))).encode())

    # -- dispatch ---------------------------------------------------------
    def do_HEAD(self):
        self.handle_any()

    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def do_PUT(self):
        self.handle_any()

    def do_DELETE(self):
        self.handle_any()

    def handle_any(self):
        raw = self.read_body() if self.command in ("POST", "PUT") else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?")[0]
        rec = {
            "t": round(time.time(), 3),
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()
                        if k.lower() in ("user-agent", "anthropic-beta", "x-app", "originator",
                                         "anthropic-version", "accept", "content-type")},
        }
        if body is None and raw:
            rec["raw"] = raw[:4000].decode("utf-8", "replace")
        try:
            if self.command == "POST" and path.endswith("/messages/count_tokens"):
                rec["body"] = body
                log_record(rec)
                return self.send_json(200, {"input_tokens": 100})
            if self.command == "POST" and path.endswith("/messages"):
                return self.anthropic_messages(body or {}, rec)
            if self.command == "POST" and path.endswith("/responses"):
                return self.openai_responses(body or {}, rec)
            rec["body"] = body
            log_record(rec)
            if path.endswith("/models") or "/models?" in self.path:
                return self.models(path)
            if self.command == "HEAD" or path in ("/", ""):
                return self.send_json(200, {"ok": True})
            return self.send_json(404, {"type": "error", "error": {
                "type": "not_found_error", "message": "fm_model_server: no %s" % path}})
        except (BrokenPipeError, ConnectionResetError):
            pass

    def models(self, path):
        ids = ["claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5", "fm-model"]
        data = [{"type": "model", "id": i, "display_name": i, "created_at": "2025-01-01T00:00:00Z",
                 "object": "model", "created": 1735689600, "owned_by": "fm"} for i in ids]
        return self.send_json(200, {"data": data, "object": "list", "models": [],
                                    "has_more": False, "first_id": ids[0], "last_id": ids[-1]})

    # -- Anthropic --------------------------------------------------------
    def anthropic_messages(self, body, rec):
        turns = anthropic_turns(body)
        prompt, steps = prompt_and_steps(turns)
        raw, raw_steps = raw_prompt_and_steps(turns, False)
        is_main = bool(body.get("tools"))
        action, rule, by_raw = choose_action(prompt, "anthropic", is_main, load_script(), raw)
        step = current_step(action, raw_steps if by_raw else steps)
        rec.update({"api": "anthropic", "main": is_main, "prompt": prompt, "steps": steps,
                    "raw_prompt": raw, "raw_steps": raw_steps,
                    "user_turns": user_turn_texts(turns), "rule": rule, "reply": step,
                    "model": body.get("model"), "stream": bool(body.get("stream")),
                    "body": body})
        log_record(rec)
        if step.get("status"):
            return self.send_json(int(step["status"]), {"type": "error", "error": {
                "type": step.get("error_type", "api_error"), "message": step.get("text", "scripted error")}})
        model = body.get("model") or "claude-sonnet-4-5"
        msg_id = next_id("msg")
        text = step.get("text", "")
        tool = step.get("tool") or ("Bash" if "command" in step else None)
        tool_input = step.get("input") or ({"command": step["command"],
                                            "description": step.get("description", "Run a command")}
                                           if "command" in step else {})
        blocks = []
        if text:
            blocks.append({"type": "text", "text": text})
        if tool:
            blocks.append({"type": "tool_use", "id": next_id("toolu"), "name": tool, "input": tool_input})
        stop = "tool_use" if tool else "end_turn"
        usage = {"input_tokens": 100, "output_tokens": max(1, len(text) // 4),
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if step.get("delay_headers"):
            time.sleep(float(step["delay_headers"]))
        if not body.get("stream"):
            if step.get("silent"):
                time.sleep(float(step["silent"]))
            return self.send_json(200, {"id": msg_id, "type": "message", "role": "assistant",
                                        "model": model, "content": blocks, "stop_reason": stop,
                                        "stop_sequence": None, "usage": usage})
        self.start_sse({"request-id": next_id("req")})
        self.sse("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": dict(usage, output_tokens=1)}})
        self.sse("ping", {"type": "ping"})
        self.wait_silent(step, lambda: self.sse("ping", {"type": "ping"}))
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                self.sse("content_block_start", {"type": "content_block_start", "index": i,
                                                 "content_block": {"type": "text", "text": ""}})
                for piece in self.pieces(b["text"], step):
                    self.sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                     "delta": {"type": "text_delta", "text": piece}})
            else:
                self.sse("content_block_start", {"type": "content_block_start", "index": i,
                                                 "content_block": {"type": "tool_use", "id": b["id"],
                                                                   "name": b["name"], "input": {}}})
                self.sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "input_json_delta",
                                                           "partial_json": json.dumps(b["input"])}})
            self.sse("content_block_stop", {"type": "content_block_stop", "index": i})
        self.sse("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": usage["output_tokens"]}})
        self.sse("message_stop", {"type": "message_stop"})
        self.end_chunks()

    # -- shared timing ------------------------------------------------------
    def wait_silent(self, step, keepalive=None):
        """`silent`: seconds before the first token (keep-alives only)."""
        end = time.time() + float(step.get("silent") or 0)
        while time.time() < end:
            time.sleep(min(1.0, max(0.0, end - time.time())))
            if keepalive and time.time() < end:
                keepalive()

    def pieces(self, text, step):
        """Yield the text in `chunks` pieces spread over `stream_secs`."""
        secs = float(step.get("stream_secs") or 0)
        n = int(step.get("chunks") or (max(1, int(secs * 4)) if secs else 1))
        n = max(1, min(n, max(1, len(text))))
        size = -(-len(text) // n)
        parts = [text[i:i + size] for i in range(0, len(text), size)] or [""]
        for k, p in enumerate(parts):
            if k and secs:
                time.sleep(secs / len(parts))
            yield p

    # -- OpenAI Responses ---------------------------------------------------
    def openai_responses(self, body, rec):
        turns = openai_turns(body)
        prompt, steps = prompt_and_steps(turns)
        raw, raw_steps = raw_prompt_and_steps(turns, True)
        tools = [t.get("name") or t.get("type") for t in body.get("tools") or [] if isinstance(t, dict)]
        # The agent's own loop offers a shell tool; side requests (Codex's
        # thread-title generation offers only apply_patch) do not.
        is_main = any(t in SHELL_TOOLS for t in tools)
        action, rule, by_raw = choose_action(prompt, "openai", is_main, load_script(), raw)
        step = current_step(action, raw_steps if by_raw else steps)
        rec.update({"api": "openai", "main": is_main, "prompt": prompt, "steps": steps,
                    "raw_prompt": raw, "raw_steps": raw_steps,
                    "user_turns": user_turn_texts(turns), "rule": rule, "reply": step,
                    "model": body.get("model"), "stream": bool(body.get("stream")),
                    "tools": tools, "body": body})
        log_record(rec)
        if step.get("status"):
            return self.send_json(int(step["status"]), {"error": {
                "type": step.get("error_type", "server_error"), "message": step.get("text", "scripted error")}})
        model = body.get("model") or "fm-model"
        resp_id = next_id("resp")
        text = step.get("text", "")
        items = []
        if text:
            items.append({"id": next_id("msg"), "type": "message", "status": "completed",
                          "role": "assistant",
                          "content": [{"type": "output_text", "text": text, "annotations": []}]})
        if "command" in step or "tool" in step:
            items.append(self.openai_tool_item(step, tools))
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": max(1, len(text) // 4),
                 "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 100 + max(1, len(text) // 4)}
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()),
                "model": model, "output": [], "status": "in_progress"}
        if step.get("delay_headers"):
            time.sleep(float(step["delay_headers"]))
        if not body.get("stream"):
            self.wait_silent(step)
            return self.send_json(200, dict(base, status="completed", output=items, usage=usage))
        self.start_sse({"x-request-id": next_id("req")})
        seq = [0]

        def ev(kind, obj):
            obj = dict(obj, type=kind, sequence_number=seq[0])
            seq[0] += 1
            self.sse(kind, obj)

        ev("response.created", {"response": base})
        ev("response.in_progress", {"response": base})
        self.wait_silent(step)
        for oi, item in enumerate(items):
            if item["type"] == "message":
                ev("response.output_item.added", {"output_index": oi, "item": dict(
                    item, status="in_progress", content=[])})
                part = {"type": "output_text", "text": "", "annotations": []}
                ev("response.content_part.added", {"item_id": item["id"], "output_index": oi,
                                                   "content_index": 0, "part": part})
                for piece in self.pieces(text, step):
                    ev("response.output_text.delta", {"item_id": item["id"], "output_index": oi,
                                                      "content_index": 0, "delta": piece})
                ev("response.output_text.done", {"item_id": item["id"], "output_index": oi,
                                                 "content_index": 0, "text": text})
                ev("response.content_part.done", {"item_id": item["id"], "output_index": oi,
                                                  "content_index": 0, "part": dict(part, text=text)})
            else:
                ev("response.output_item.added", {"output_index": oi, "item": item})
            ev("response.output_item.done", {"output_index": oi, "item": item})
        ev("response.completed", {"response": dict(base, status="completed", output=items, usage=usage)})
        self.end_chunks()

    def openai_tool_item(self, step, tools):
        """A tool call in the shape the request's tool list asks for."""
        call_id = next_id("call")
        cmd = step.get("command", "")
        name = step.get("tool")
        if not name:
            for cand in ("exec_command", "shell_command", "shell", "local_shell"):
                if cand in tools:
                    name = cand
                    break
            else:
                name = "shell"
        if "arguments" in step:
            args = step["arguments"]
        elif name == "exec_command":
            args = {"cmd": cmd}
        elif name == "shell_command":
            args = {"command": cmd}
        else:
            args = {"command": ["bash", "-lc", cmd]}
        if step.get("workdir"):
            args["workdir"] = step["workdir"]
        if step.get("sandbox_permissions"):
            args["sandbox_permissions"] = step["sandbox_permissions"]
        if step.get("justification"):
            args["justification"] = step["justification"]
        if step.get("yield_time_ms") and name == "exec_command":
            args["yield_time_ms"] = step["yield_time_ms"]
        if name == "local_shell":
            return {"id": next_id("lsh"), "type": "local_shell_call", "call_id": call_id,
                    "status": "completed", "action": {"type": "exec", "command": args["command"]}}
        return {"id": next_id("fc"), "type": "function_call", "status": "completed",
                "call_id": call_id, "name": name, "arguments": json.dumps(args)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    ap.add_argument("--max-secs", type=float, default=600, help="exit after this many seconds")
    ap.add_argument("--log", help="append one JSON line per request here")
    ap.add_argument("--script", help="JSON rule file (re-read on every request)")
    a = ap.parse_args()
    STATE["log"] = a.log
    STATE["script"] = a.script
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    sys.stdout.write("port=%d\n" % srv.server_address[1])
    sys.stdout.flush()

    def stop(*_):
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    timer = threading.Timer(a.max_secs, stop)
    timer.daemon = True
    timer.start()
    srv.serve_forever(poll_interval=0.2)
    srv.server_close()


if __name__ == "__main__":
    main()

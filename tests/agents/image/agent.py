"""A small agent shipped as a container image: the standard library only, as an image would carry it.

It asks the model (OPENAI_BASE_URL), looks the order up with the tool API (ORDERS_API_URL) and asks
the model again with the result. Its arguments pick a behaviour for the tests:
  --prompt TEXT   the user's question (default: refund order 17)
  --crash         exit 4 after a clean run (the agent itself failing)
  --extra-tool    look up a second order that was never recorded
  --ask-again     ask the model a third time
  --reach-out     first try to open a connection to an outside address; exit 5 if it succeeds
  --show-env      print the environment it got, one NAME=VALUE a line
  --retry         ask the model once more when it answers 429 or 5xx, saying so
"""

import argparse
import json
import os
import socket
import sys
import urllib.error
import urllib.request

SYSTEM = "You are a refunds assistant. Answer in one sentence."


def post_chat(messages, retry=False):
    try:
        return _post_chat(messages)
    except urllib.error.HTTPError as exc:
        if not retry or (exc.code != 429 and exc.code < 500):
            raise
        print(f"model answered {exc.code}; asking again")
        return _post_chat(messages)


def _post_chat(messages):
    body = json.dumps({"model": "gpt-4o-mini", "messages": messages}).encode()
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=body,
        headers={
            "content-type": "application/json",
            "authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["choices"][0]["message"]["content"]


def get_order(order_id):
    with urllib.request.urlopen(f"{os.environ['ORDERS_API_URL']}/orders/{order_id}", timeout=30) as response:
        return json.load(response)


def reach_out():
    try:
        socket.create_connection(("192.0.2.1", 443), timeout=5).close()
    except OSError as exc:
        print(f"outside address unreachable: {exc}")
        return
    print("outside address reached")
    sys.exit(5)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompt", default="Can order 17 be refunded?")
    for flag in ("--crash", "--extra-tool", "--ask-again", "--reach-out", "--show-env", "--retry"):
        parser.add_argument(flag, action="store_true")
    args = parser.parse_args()
    if args.show_env:
        for name in sorted(os.environ):
            print(f"{name}={os.environ[name]}")
    if args.reach_out:
        reach_out()
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": args.prompt}]
    plan = post_chat(messages, args.retry)
    order = get_order(17)
    if args.extra_tool:
        get_order(99)
    messages += [{"role": "assistant", "content": plan}, {"role": "user", "content": json.dumps(order)}]
    print(post_chat(messages, args.retry))
    if args.ask_again:
        print(post_chat([*messages, {"role": "user", "content": "Are you sure?"}]))
    if args.crash:
        sys.exit(4)


if __name__ == "__main__":
    main()

"""Another local process (or a web page that reached loopback through DNS rebinding) trying to add a
call to a recording, or to have one forwarded live, knowing the listener's port but not its secret.

    intruder.py URL SUFFIX...

URL is what the run was handed (with the secret); for each SUFFIX it tries the port without the
secret, with a wrong one, and the right URL under a foreign Host header, and prints one line each:
`<attempt> <suffix> <status>`.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from urllib.parse import urlsplit

BODY = json.dumps(
    {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "intruder"}],
        "request": {"jsonrpc": "2.0", "id": 1, "method": "tools/call"},
        "response": {"jsonrpc": "2.0", "id": 1, "result": {}},
    }
).encode()


def status(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=BODY, headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def main() -> None:
    url, suffixes = sys.argv[1], sys.argv[2:]
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    for suffix in suffixes:
        print("no-secret", suffix, status(origin + suffix, {}))
        print("wrong-secret", suffix, status(origin + "/not-the-secret" + suffix, {}))
        rebound = {"Host": f"attacker.example:{parts.port}"}
        print("foreign-host", suffix, status(url + suffix, rebound))


if __name__ == "__main__":
    main()

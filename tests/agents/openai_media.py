"""The openai SDK's embeddings, images and audio endpoints, for the provider tests.

    python openai_media.py [WORD]

Prints what each call returned (the speech as the sha256 of its bytes), so a capture and its replay
print the same. WORD is embedded and spoken (default "hello"). An API error exits 4 with its message.
"""

from __future__ import annotations

import hashlib
import io
import sys

import openai


def main() -> int:
    word = sys.argv[1] if len(sys.argv) > 1 else "hello"
    client = openai.OpenAI(max_retries=0)
    try:
        print(
            "embedding:",
            client.embeddings.create(model="text-embedding-3-small", input=word).data[0].embedding,
        )
        image = client.images.generate(model="gpt-image-1", prompt=f"a {word} sign", size="1024x1024")
        print("image:", image.data[0].b64_json)
        speech = client.audio.speech.create(model="gpt-4o-mini-tts", voice="alloy", input=word)
        print("speech sha256:", hashlib.sha256(speech.content).hexdigest())
        upload = ("note.wav", io.BytesIO(b"RIFF\x24\x00\x00\x00WAVEfmt " + word.encode()), "audio/wav")
        print("transcript:", client.audio.transcriptions.create(model="whisper-1", file=upload).text)
    except openai.APIStatusError as exc:
        print(f"openai error {exc.status_code}: {exc.message}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())

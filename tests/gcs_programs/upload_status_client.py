"""A resumable upload's status asked as TensorFlow's client asks it after a failed chunk
(`PUT` with `Content-Range: bytes */TOTAL`), before any byte and after 40 bytes, then the
upload finished, for tests/cluster/test_testing_gcs.py; prints what the emulator answered.

  upload_status_client.py BUCKET NAME
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import sys
import urllib.parse


def main(bucket: str, name: str) -> None:
    endpoint = urllib.parse.urlparse(os.environ["STORAGE_EMULATOR_HOST"])
    context = ssl.create_default_context(cafile=os.environ["REQUESTS_CA_BUNDLE"])

    def send(method: str, target: str, body: bytes = b"", **headers: str):
        connection = http.client.HTTPSConnection(endpoint.hostname, endpoint.port or 443,
                                                 context=context, timeout=30)
        connection.request(method, target, body=body, headers={
            "Content-Length": str(len(body)), **{k.replace("_", "-"): v
                                                 for k, v in headers.items()}})
        response = connection.getresponse()
        response.read()
        connection.close()
        return response.status, response.getheader("Range"), response.getheader("Location")

    _, _, location = send("POST", f"/upload/storage/v1/b/{bucket}/o?uploadType=resumable&"
                                  f"name={urllib.parse.quote(name)}")
    session = urllib.parse.urlparse(location)
    target = f"{session.path}?{session.query}"
    answers = {"before_a_byte": send("PUT", target, Content_Range="bytes */100")[:2],
               "chunk": send("PUT", target, b"x" * 40, Content_Range="bytes 0-39/*")[:2],
               "after_40": send("PUT", target, Content_Range="bytes */100")[:2],
               "last": send("PUT", target, b"y" * 60, Content_Range="bytes 40-99/100")[:2]}
    print(json.dumps(answers))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

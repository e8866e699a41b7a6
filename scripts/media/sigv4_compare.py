"""Compares our SigV4 signer (orbitcove-sigv4-dump) with botocore's, the reference every AWS SDK for Python uses.

    python sigv4_compare.py --dump .build/debug/orbitcove-sigv4-dump [--random 500] [--seed 4]

Needs botocore==1.43.11. Two parts:
- sigv4_vectors.json: AWS's published examples (the S3 documentation's and the SigV4 test suite's). Both the
  dump and botocore must give the published canonical request, signature and Authorization exactly.
- --random N generated requests: methods, paths with spaces, non-ASCII and reserved characters, dot segments
  and doubled slashes, queries with repeated names, empty values and loosely encoded characters, headers
  with runs of spaces and tabs and repeated names, bodies, session tokens, default and other ports; signed
  with headers (S3SigV4Auth for s3, SigV4Auth for other services) and presigned (S3SigV4QueryAuth). The
  dump's headers or URL, canonical request and string to sign must equal botocore's.

botocore runs its real signing path (`add_auth`) at a fixed time, with `botocore.auth.get_current_datetime`
patched (the function add_auth asks for the time); its canonical request and string to sign are read from
the debug log lines add_auth writes. Exit status 1 on any difference, each one printed.
"""

import argparse
import base64
import json
import logging
import os
import random
import subprocess
import sys
import types
from datetime import datetime, timedelta
from hashlib import sha256
from unittest import mock
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

HERE = os.path.dirname(os.path.abspath(__file__))
TIMESTAMP = "%Y%m%dT%H%M%SZ"


class SigningLog(logging.Handler):
    """Keeps the canonical request and string to sign that botocore.auth logs while it signs."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.texts = {}

    def emit(self, record):
        for label in ("CanonicalRequest", "StringToSign"):
            if record.msg.startswith(label + ":"):
                self.texts[label] = record.args[0] if isinstance(record.args, tuple) else record.args


SIGNING_LOG = SigningLog()
logging.getLogger("botocore.auth").addHandler(SIGNING_LOG)
logging.getLogger("botocore.auth").setLevel(logging.DEBUG)
logging.getLogger("botocore.auth").propagate = False


def body_of(case):
    if "bodyBase64" in case:
        return base64.b64decode(case["bodyBase64"])
    return case.get("body", "").encode("utf-8")


def query_pairs(query):
    """The URL query's parameters decoded as SigV4 reads them: `+` is itself, not a space."""
    pairs = []
    for piece in query.split("&"):
        if piece:
            name, _, value = piece.partition("=")
            pairs.append((unquote(name), unquote(value)))
    return pairs


def botocore_request(case):
    """An AWSRequest for the case: the query goes in as parameters, as botocore's serializers pass it."""
    parts = urlsplit(case["url"])
    request = AWSRequest(
        method=case["method"], url=urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), data=body_of(case))
    request.params = query_pairs(parts.query)
    for name, value in case.get("headers", []):
        request.headers[name] = value  # botocore's HTTPHeaders keeps a repeated name twice
    return request


def botocore_sign(case):
    """What botocore's add_auth makes of the case, at the case's time."""
    credentials = Credentials(case["accessKey"], case["secretKey"], case.get("sessionToken"))
    request = botocore_request(case)
    s3 = case["service"] == "s3"
    if case["mode"] == "presign":
        request.params = dict(request.params)  # SigV4QueryAuth merges them into a dict
        auth = botocore.auth.S3SigV4QueryAuth(credentials, case["service"], case["region"], expires=case["expires"])
    elif s3:
        if case.get("unsignedPayload"):
            request.context["client_config"] = types.SimpleNamespace(s3={"payload_signing_enabled": False})
        auth = botocore.auth.S3SigV4Auth(credentials, case["service"], case["region"])
    else:
        auth = botocore.auth.SigV4Auth(credentials, case["service"], case["region"])
    SIGNING_LOG.texts = {}
    now = datetime.strptime(case["date"], TIMESTAMP)
    with mock.patch("botocore.auth.get_current_datetime", return_value=now):
        auth.add_auth(request)
    result = {"canonicalRequest": SIGNING_LOG.texts.get("CanonicalRequest"),
              "stringToSign": SIGNING_LOG.texts.get("StringToSign")}
    if case["mode"] == "presign":
        result["url"] = request.url
    else:
        names = ["Authorization", "X-Amz-Date"] + (["X-Amz-Content-SHA256"] if s3 else [])
        names += ["X-Amz-Security-Token"] if case.get("sessionToken") else []
        result["headers"] = {name.lower(): request.headers[name] for name in names}
    return result


def botocore_sign_as_published(case):
    """botocore's signature of a published example, through its steps rather than add_auth.

    The S3 PUT example sends a Date header beside x-amz-date, which add_auth would rewrite; the steps sign
    the headers as the example gives them, as moto does when it checks a signature.
    """
    credentials = Credentials(case["accessKey"], case["secretKey"], case.get("sessionToken"))
    request = botocore_request(case)
    request.context["timestamp"] = case["date"]
    request.headers["X-Amz-Date"] = case["date"]
    s3 = case["service"] == "s3"
    if s3:
        request.headers["X-Amz-Content-SHA256"] = sha256(body_of(case)).hexdigest()
    if case.get("sessionToken"):
        request.headers["X-Amz-Security-Token"] = case["sessionToken"]
    auth_type = botocore.auth.S3SigV4Auth if s3 else botocore.auth.SigV4Auth
    auth = auth_type(credentials, case["service"], case["region"])
    canonical = auth.canonical_request(request)
    string_to_sign = auth.string_to_sign(request, canonical)
    signature = auth.signature(string_to_sign, request)
    auth._inject_signature_to_request(request, signature)
    return {"canonicalRequest": canonical, "stringToSign": string_to_sign, "signature": signature,
            "authorization": request.headers["Authorization"]}


def run_dump(dump, cases):
    lines = "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)
    done = subprocess.run([dump], input=lines.encode("utf-8"), capture_output=True, check=True)
    results = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    if len(results) != len(cases):
        sys.exit(f"the dump answered {len(results)} lines for {len(cases)} cases")
    return results


def url_parts(url):
    """A URL as a server reads it: where it goes and its query's parameters, whatever their order."""
    parts = urlsplit(url)
    return parts.scheme, parts.netloc, parts.path, sorted(parse_qsl(parts.query, keep_blank_values=True))


def published_differences(vector, ours, theirs):
    """What the dump (ours) and botocore (theirs) got wrong of a published example."""
    expected = vector["expected"]
    found = []
    for who, result in (("dump", ours), ("botocore", theirs)):
        if result.get("error"):
            found.append(f"{who}: {result['error']}")
            continue
        canonical = result.get("canonicalRequest") or ""
        got = {
            "canonicalRequest": canonical,
            "canonicalRequestHash": sha256(canonical.encode("utf-8")).hexdigest(),
            "signature": result.get("signature"),
            "authorization": result.get("authorization") or result.get("headers", {}).get("Authorization"),
            "url": result.get("url"),
        }
        for field, value in expected.items():
            if got[field] != value:
                found.append(f"{who} {field}:\n    got      {got[field]!r}\n    expected {value!r}")
    return found


def random_differences(case, ours, theirs):
    if ours.get("error"):
        return [f"dump: {ours['error']}"]
    found = []
    for field in ("canonicalRequest", "stringToSign"):
        if ours.get(field) != theirs[field]:
            found.append(f"{field}:\n    dump     {ours.get(field)!r}\n    botocore {theirs[field]!r}")
    if case["mode"] == "presign":
        if url_parts(ours["url"]) != url_parts(theirs["url"]):
            found.append(f"url:\n    dump     {ours['url']}\n    botocore {theirs['url']}")
    else:
        mine = {name.lower(): value for name, value in ours["headers"].items()}
        if mine != theirs["headers"]:
            found.append(f"headers:\n    dump     {mine}\n    botocore {theirs['headers']}")
    return found


# ---- generated requests -----------------------------------------------------------------------------------

PATH_PIECES = ["photos", "a b", "été", "漢字", "🎉", "a+b", "x=y", "(1)", "it's", "50%", "~tilde", "semi;colon",
               "at@", "$dollar", "comma,", "star*", "bang!", "colon:", "dash-under_dot.", "", ".", ".."]
QUERY_NAMES = ["prefix", "max-keys", "acl", "Param", "param", "a b", "é", "x-id", "list-type", "k~", "z", "A"]
QUERY_VALUES = ["", "J", "value", "a b", "a+b", "x/y", "100%", "é漢🎉", "=", "?&", "'quote'", "Value", "value1"]
HEADER_NAMES = ["Content-Type", "X-Amz-Meta-Owner", "x-amz-meta-owner", "My-Header", "Range", "Cache-Control",
                "x-amz-checksum-sha256", "X-Custom", "content-length", "If-None-Match"]
HEADER_VALUES = ["image/jpeg", "  padded  ", "a   b\tc", "\tlead tab", "bytes=0-9", "", "\"quoted   value\"",
                 "no-cache, no-store", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "1234"]
ORIGINS = ["https://examplebucket.s3.amazonaws.com", "https://s3.eu-west-1.amazonaws.com",
           "https://s3.eu-west-1.amazonaws.com:443", "http://127.0.0.1:55900", "http://localhost:80",
           "http://minio.internal:9000", "https://Example.AmazonAWS.com:8443", "http://[::1]:9000"]
# Characters RFC 3986 allows raw in a path or query, which a less strict encoder leaves as they are.
LOOSE_PATH = "/~!$'()*,;=:@"
LOOSE_QUERY = "-_.~!$'()*,;:@/?+"


def random_case(rng, index):
    service = rng.choice(["s3"] * 4 + ["service", "iam", "execute-api"])
    mode = "presign" if service == "s3" and rng.random() < 0.35 else "headers"
    pieces = [rng.choice(PATH_PIECES) for _ in range(rng.randint(0, 4))]
    raw_path = "/" + "/".join(pieces) + rng.choice(["", "/"])
    # S3's URLs come from botocore's serializer (everything but / and ~ encoded): botocore signs S3's path as
    # it is, so it only agrees with a correctly encoded one. Other services encode the path again, so any
    # valid URL path serves there.
    path = quote(raw_path, safe="/~" if service == "s3" else rng.choice(["/~", LOOSE_PATH]))
    names = QUERY_NAMES[:]
    rng.shuffle(names)
    query = []
    for _ in range(rng.randint(0, 4)):
        name = names.pop() if mode == "presign" else rng.choice(QUERY_NAMES)
        query.append((name, rng.choice(QUERY_VALUES)))
    safe = rng.choice(["-_.~", LOOSE_QUERY])
    encoded = "&".join(
        quote(name, safe=safe) + ("" if value == "" and rng.random() < 0.3 else "=" + quote(value, safe=safe))
        for name, value in query)
    url = rng.choice(ORIGINS) + path + ("?" + encoded if encoded else "")
    headers = [[rng.choice(HEADER_NAMES), rng.choice(HEADER_VALUES)] for _ in range(rng.randint(0, 4))]
    day = datetime(2013, 1, 1) + timedelta(seconds=rng.randint(0, 18 * 365 * 86_400))
    case = {
        "id": f"random-{index}", "mode": mode, "method": rng.choice(["GET", "PUT", "POST", "DELETE", "HEAD"]),
        "url": url, "headers": headers, "date": day.strftime(TIMESTAMP),
        "accessKey": "AKIA" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16)),
        "secretKey": base64.b64encode(rng.randbytes(30)).decode(),
        "region": rng.choice(["us-east-1", "eu-west-1", "ap-southeast-2"]), "service": service,
    }
    if rng.random() < 0.25:
        case["sessionToken"] = base64.b64encode(rng.randbytes(48)).decode()
    if mode == "presign":
        case["expires"] = rng.choice([1, 60, 900, 3600, 86_400, 604_800, rng.randint(1, 604_800)])
    elif rng.random() < 0.5:
        if rng.random() < 0.5:
            case["bodyBase64"] = base64.b64encode(rng.randbytes(rng.randint(1, 300))).decode()
        else:
            case["body"] = rng.choice(["Welcome to Amazon S3.", "{\"a\": 1}", "é漢🎉", " "])
    if service == "s3" and mode == "headers" and rng.random() < 0.2:
        case["unsignedPayload"] = True
    return case


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", default=".build/debug/orbitcove-sigv4-dump")
    parser.add_argument("--vectors", default=os.path.join(HERE, "sigv4_vectors.json"))
    parser.add_argument("--random", type=int, default=500)
    parser.add_argument("--seed", type=int, default=4)
    args = parser.parse_args()

    with open(args.vectors, encoding="utf-8") as file:
        vectors = json.load(file)["vectors"]
    rng = random.Random(args.seed)
    generated = [random_case(rng, index) for index in range(args.random)]
    published = [dict(vector["request"], id=vector["name"]) for vector in vectors]
    answers = run_dump(args.dump, published + generated)

    failures = []
    for vector, case, ours in zip(vectors, published, answers):
        if case["mode"] == "presign":
            theirs = botocore_sign(case)
            theirs["signature"] = dict(parse_qsl(urlsplit(theirs["url"]).query))["X-Amz-Signature"]
        else:
            theirs = botocore_sign_as_published(case)
        found = published_differences(vector, ours, theirs)
        if found:
            failures.append((case["id"], case, found))
    modes = {}
    for case, ours in zip(generated, answers[len(published):]):
        found = random_differences(case, ours, botocore_sign(case))
        kind = f"{case['mode']}/{'s3' if case['service'] == 's3' else 'other services'}"
        modes[kind] = modes.get(kind, 0) + 1
        if found:
            failures.append((case["id"], case, found))

    for name, case, found in failures:
        print(f"DIFFERENT {name}: {json.dumps(case, ensure_ascii=False)}")
        for line in found:
            print("  " + line)
    failed = {name for name, _, _ in failures}
    from_docs = sum(1 for vector in vectors if vector["name"].startswith("s3-"))
    print(f"published examples: {sum(1 for case in published if case['id'] not in failed)} of {len(published)} "
          f"given exactly by the dump and by botocore ({from_docs} from the S3 documentation, "
          f"{len(published) - from_docs} from the SigV4 test suite)")
    by_mode = ", ".join(f"{count} {kind}" for kind, count in sorted(modes.items()))
    print(f"generated requests: {sum(1 for case in generated if case['id'] not in failed)} of {len(generated)} "
          f"signed as botocore {botocore.__version__} signs them (seed {args.seed}: {by_mode})")
    print(f"{len(published) + len(generated) - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

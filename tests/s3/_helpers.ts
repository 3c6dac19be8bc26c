/**
 * Helpers of the S3 storage tests: what no storage request may carry, and the check that the
 * client never sent a request real S3 would refuse.
 *
 * @module
 */
import { assert } from "../fixtures/assert.ts";
import type { GateRecord, S3Gate } from "../fixtures/s3_gate.ts";

/** The registry user of the S3 tests; its credential must never reach storage. */
export const USER = { username: "s3-user", password: "s3-pass-5e1c" };

/** Headers that carry credentials or browsing context. */
const CREDENTIAL_HEADERS = ["authorization", "proxy-authorization", "cookie", "referer"];

/**
 * Asserts that the clients sent storage at least one request, none with a credential header
 * and none mentioning the registry password (raw or in a Basic credential).
 */
export function assertNoCredentialOnStorage(gate: S3Gate): GateRecord[] {
  const requests = gate.clientRequests();
  assert(requests.length > 0, "the client reached storage");
  const basic = btoa(`${USER.username}:${USER.password}`);
  for (const record of requests) {
    for (const name of CREDENTIAL_HEADERS) {
      assert(record.headers[name] === undefined, `${record.method}: ${name} reached storage`);
    }
    const text = JSON.stringify(record.headers) + record.query;
    assert(!text.includes(USER.password) && !text.includes(basic), "registry secret on storage");
  }
  return requests;
}

/** Asserts that every client request to storage was one S3 serves (no 4xx, no 5xx). */
export function assertNoRefusals(gate: S3Gate): void {
  for (const record of gate.clientRequests()) {
    if (record.cut) continue;
    assert(
      record.status !== undefined && record.status < 400,
      `${record.method} answered ${record.status}`,
    );
  }
}

/** The value of `X-Amz-Signature` in a recorded query. */
export function signatureOf(record: GateRecord): string {
  return new URLSearchParams(record.query).get("X-Amz-Signature") ?? "";
}

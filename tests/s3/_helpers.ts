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

/**
 * Asserts that storage never refused a client request: once every exchange has ended, none was
 * answered 4xx or 5xx (whether or not the client read the answer), and each was answered, cut by
 * the test, or aborted by the client (a request the client gave up on is not a refusal).
 */
export async function assertNoRefusals(gate: S3Gate): Promise<void> {
  await gate.settled();
  for (const record of gate.clientRequests()) {
    const what = `${record.method} (${record.outcome})`;
    assert(record.status === undefined || record.status < 400, `${what} answered ${record.status}`);
    assert(record.outcome !== "dropped", `${what}: the gate dropped it`);
    assert(
      record.outcome !== "answered" || record.status !== undefined,
      `${what} without a status`,
    );
  }
}

/** The value of `X-Amz-Signature` in a recorded query. */
export function signatureOf(record: GateRecord): string {
  return new URLSearchParams(record.query).get("X-Amz-Signature") ?? "";
}

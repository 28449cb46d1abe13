import { Code, ConnectError } from "@connectrpc/connect";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
const errorInfoType = "google.rpc.ErrorInfo";
/**
 * SettleError rejects an ack, nak, term or extend that did not take effect.
 * `reason` is the gateway's UPPER_SNAKE reason (`LEASE_EXPIRED`,
 * `LEASE_SETTLED`, `TOKEN_WRONG_PRINCIPAL`, …), or the gRPC code's name when
 * the whole call failed without one (`UNAVAILABLE`); `CLOSED` when the
 * subscription was closed in "nak" mode before the settle was sent.
 */
export class SettleError extends Error {
    reason;
    /** The gRPC code (connect's Code) of the failure. */
    code;
    constructor(reason, code, message) {
        super(message ? `${reason}: ${message}` : reason);
        this.name = "SettleError";
        this.reason = reason;
        this.code = code;
    }
}
/**
 * FinalError, thrown (or rejected) by a subscriber's handler, terminates the
 * message (Term, with the error's message as the reason) instead of naking
 * it for another try. An error of any class with `final: true` does the same.
 */
export class FinalError extends Error {
    final = true;
    constructor(message) {
        super(message);
        this.name = "FinalError";
    }
}
/** LeaseError reports a lease the subscriber let go or lost (to onError). */
export class LeaseError extends Error {
    /** `MAX_LEASE` (held for maxLease, let go) or `LEASE_LOST` (an extend failed). */
    reason;
    streamSeq;
    constructor(reason, streamSeq, message) {
        super(`${reason}: ${message}`);
        this.name = "LeaseError";
        this.reason = reason;
        this.streamSeq = streamSeq;
    }
}
/** isFinal says whether a handler's error asks for Term rather than Nak. */
export function isFinal(err) {
    return typeof err === "object" && err !== null && err.final === true;
}
/** reasonOf is the ErrorInfo reason of a failed call, else its code's name. */
export function reasonOf(err) {
    const ce = ConnectError.from(err);
    for (const d of ce.details) {
        if ("type" in d && d.type === errorInfoType) {
            const reason = decodeErrorInfoReason(d.value);
            if (reason) {
                return { reason, code: ce.code, message: ce.rawMessage };
            }
        }
    }
    return { reason: codeName(ce.code), code: ce.code, message: ce.rawMessage };
}
/** codeName is a gRPC code as its UPPER_SNAKE name (Code.Unavailable → UNAVAILABLE). */
export function codeName(code) {
    return (Code[code] ?? "UNKNOWN").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}
// decodeErrorInfoReason reads field 1 (reason) of a google.rpc.ErrorInfo,
// whose schema the library does not carry.
function decodeErrorInfoReason(bytes) {
    try {
        const r = new BinaryReader(bytes);
        while (r.pos < r.len) {
            const [field, wire] = r.tag();
            if (field === 1 && wire === WireType.LengthDelimited) {
                return r.string();
            }
            r.skip(wire);
        }
    }
    catch {
        // A malformed detail: fall back to the code.
    }
    return "";
}
/** retryable says whether a failed call may succeed when tried again. */
export function retryable(err) {
    const code = ConnectError.from(err).code;
    return code === Code.Unavailable || code === Code.Unknown || code === Code.Internal ||
        code === Code.ResourceExhausted || code === Code.Aborted || code === Code.DeadlineExceeded;
}
/**
 * fatalOnOpen says whether a stream that failed before its first answer
 * would fail the same way however often it is opened again: the consumer
 * does not exist, the caller may not read it, the request is wrong.
 */
export function fatalOnOpen(err) {
    const code = ConnectError.from(err).code;
    return code === Code.NotFound || code === Code.PermissionDenied || code === Code.Unauthenticated ||
        code === Code.InvalidArgument || code === Code.Unimplemented;
}

import { Code } from "@connectrpc/connect";
/**
 * SettleError rejects an ack, nak, term or extend that did not take effect.
 * `reason` is the gateway's UPPER_SNAKE reason (`LEASE_EXPIRED`,
 * `LEASE_SETTLED`, `TOKEN_WRONG_PRINCIPAL`, …), or the gRPC code's name when
 * the whole call failed without one (`UNAVAILABLE`); `CLOSED` when the
 * subscription was closed in "nak" mode before the settle was sent.
 */
export declare class SettleError extends Error {
    readonly reason: string;
    /** The gRPC code (connect's Code) of the failure. */
    readonly code: Code;
    constructor(reason: string, code: Code, message?: string);
}
/**
 * FinalError, thrown (or rejected) by a subscriber's handler, terminates the
 * message (Term, with the error's message as the reason) instead of naking
 * it for another try. An error of any class with `final: true` does the same.
 */
export declare class FinalError extends Error {
    readonly final = true;
    constructor(message: string);
}
/** LeaseError reports a lease the subscriber let go or lost (to onError). */
export declare class LeaseError extends Error {
    /** `MAX_LEASE` (held for maxLease, let go) or `LEASE_LOST` (an extend failed). */
    readonly reason: string;
    readonly streamSeq: number;
    constructor(reason: string, streamSeq: number, message: string);
}
/** isFinal says whether a handler's error asks for Term rather than Nak. */
export declare function isFinal(err: unknown): boolean;
/** reasonOf is the ErrorInfo reason of a failed call, else its code's name. */
export declare function reasonOf(err: unknown): {
    reason: string;
    code: Code;
    message: string;
};
/** codeName is a gRPC code as its UPPER_SNAKE name (Code.Unavailable → UNAVAILABLE). */
export declare function codeName(code: Code): string;
/** retryable says whether a failed call may succeed when tried again. */
export declare function retryable(err: unknown): boolean;
/**
 * fatalOnOpen says whether a stream that failed before its first answer
 * would fail the same way however often it is opened again: the consumer
 * does not exist, the caller may not read it, the request is wrong.
 */
export declare function fatalOnOpen(err: unknown): boolean;

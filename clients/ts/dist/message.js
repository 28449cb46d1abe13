import { Code } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { SettleError } from "./errors.js";
/**
 * Message is one leased delivery. ack, nak, term and extend resolve once the
 * gateway confirmed them and reject with a SettleError otherwise. Calls on
 * one message run one after another, each with the token of the latest
 * Extend, so an extend and a settle never race.
 */
export class Message {
    subject;
    data;
    /** Headers, each with all its values. */
    headers;
    metadata;
    #token;
    #deadline;
    #gen = 0; // bumped when a redelivery replaces the lease
    #tail = Promise.resolve();
    #settled;
    #keptAlive = false; // extended by a duration: the gateway keeps the lease alive past its stream
    #sender;
    #owner;
    /** @internal */
    constructor(m, sender, owner) {
        this.subject = m.subject;
        this.data = m.data;
        this.headers = {};
        for (const [k, v] of Object.entries(m.headers)) {
            this.headers[k] = [...v.values];
        }
        const md = m.metadata;
        this.metadata = {
            stream: md?.stream ?? "",
            consumer: md?.consumer ?? "",
            streamSeq: Number(md?.streamSeq ?? 0n),
            consumerSeq: Number(md?.consumerSeq ?? 0n),
            numDelivered: Number(md?.numDelivered ?? 0n),
            numPending: Number(md?.numPending ?? 0n),
            timestamp: md?.timestamp ? timestampDate(md.timestamp) : undefined,
        };
        this.#token = m.token;
        this.#deadline = m.leaseDeadline ? timestampDate(m.leaseDeadline) : new Date(0);
        this.#sender = sender;
        this.#owner = owner;
    }
    /** The lease's current token (it changes with each Extend). */
    get token() {
        return this.#token;
    }
    /** When the lease ends unless extended or settled. */
    get leaseDeadline() {
        return this.#deadline;
    }
    /** ack acknowledges the message: it is done. */
    ack() {
        return this.#settle("ack", "");
    }
    /**
     * nak hands the message back for redelivery, after opts.delay ms. An
     * argument of another shape (`nak(2000)`) or a delay that is not a
     * number rejects with a RangeError, nothing sent: bent into a nak without
     * delay, it would burn a delivery at once.
     */
    nak(opts = {}) {
        if (typeof opts !== "object" || opts === null) {
            return Promise.reject(new RangeError(`nak takes options ({ delay: ms }), not ${String(opts)}`));
        }
        const d = opts.delay ?? 0;
        if (typeof d !== "number" || !Number.isFinite(d) || d < 0) {
            return Promise.reject(new RangeError(`nak: delay ${String(d)} is not a number of milliseconds, 0 or more`));
        }
        return this.#settle("nak", Math.round(d));
    }
    /**
     * term ends the message for good (dead-lettered where configured), with a
     * reason: a string, or options ({ reason }) as DESIGN gives the optional
     * arguments. Anything else rejects with a RangeError, nothing sent.
     */
    term(reason = "") {
        const r = typeof reason === "object" && reason !== null ? reason.reason ?? "" : reason;
        if (typeof r !== "string") {
            return Promise.reject(new RangeError(`term takes a reason (a string, or { reason }), not ${String(r)}`));
        }
        return this.#settle("term", r);
    }
    /**
     * extend restarts the lease's clock: for one ack_wait, or for
     * opts.duration ms (see ExtendOptions). It resolves with the new deadline;
     * the new token it brings is used from then on. With duration 0 the
     * message is given back, as a nak would: it resolves with the moment it
     * went back, and any later settle but `nak()` rejects with LEASE_SETTLED.
     */
    extend(opts = {}) {
        const d = opts.duration;
        if (d !== undefined && !Number.isFinite(d)) {
            return Promise.reject(new RangeError(`extend: duration ${d} is not a number of milliseconds`));
        }
        // Only 0 gives the message back: a duration that rounds to 0 (0.4, -0.4)
        // goes as asked, for the gateway to refuse (under 1ms, or negative).
        if (d === 0) {
            return this.#settle("nak", 0, () => this.#sender.send(this.metadata.stream, this.metadata.consumer, "extend", this.#token, this.#deadline.getTime(), 0))
                .then(() => this.#deadline);
        }
        if (this.#settled) {
            return Promise.reject(new SettleError("LEASE_SETTLED", Code.FailedPrecondition, "the message was settled"));
        }
        return this.#enqueue(async () => {
            const gen = this.#gen;
            const arg = d === undefined ? "" : Math.abs(d) < 1 ? d : Math.round(d);
            const e = await this.#sender.send(this.metadata.stream, this.metadata.consumer, "extend", this.#token, this.#deadline.getTime(), arg);
            if (e && gen === this.#gen) {
                this.#token = e.token;
                this.#deadline = e.deadline;
                this.#keptAlive = d !== undefined;
                this.#owner?.extended(this);
            }
            return e ? e.deadline : this.#deadline;
        });
    }
    /**
     * @internal keptAlive reports whether the lease was last extended by a
     * duration, which the gateway keeps alive after its stream ends: closing
     * the stream does not give it back.
     */
    get keptAlive() {
        return this.#keptAlive;
    }
    /** @internal settled reports whether a settle was asked for. */
    get settleAsked() {
        return this.#settled !== undefined;
    }
    /**
     * @internal adopt makes a redelivery of this message (same stream
     * sequence) the lease this object settles.
     */
    adopt(m) {
        this.#gen++;
        this.#token = m.token;
        this.#deadline = m.leaseDeadline ? timestampDate(m.leaseDeadline) : this.#deadline;
        this.metadata.numDelivered = Number(m.metadata?.numDelivered ?? this.metadata.numDelivered);
    }
    /** @internal settleBy settles with an argument as the subscriber computed it. */
    settleBy(op, arg) {
        return this.#settle(op, arg);
    }
    // settle sends op, or what send sends in its place (an extend by 0 for a
    // nak), once; the same settle again shares its outcome.
    #settle(op, arg, send) {
        const s = this.#settled;
        if (s) {
            if (s.op === op && s.arg === arg) {
                return s.done;
            }
            return Promise.reject(new SettleError("LEASE_SETTLED", Code.FailedPrecondition, `already ${s.op}ed`));
        }
        const done = this.#enqueue(async () => {
            if (send) {
                const e = await send();
                if (e) {
                    this.#deadline = e.deadline; // when it went back
                }
                return;
            }
            await this.#sender.send(this.metadata.stream, this.metadata.consumer, op, this.#token, this.#deadline.getTime(), arg);
        });
        this.#settled = { op, arg, done };
        this.#owner?.settling(this, op, done, arg);
        done.catch(() => {
            if (this.#settled?.done === done) {
                this.#settled = undefined; // failed: a retry sends again
            }
        });
        return done;
    }
    #enqueue(fn) {
        const p = this.#tail.then(fn);
        this.#tail = p.catch(() => undefined);
        return p;
    }
}

import { Code } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Message as WireMessage } from "./gen/jetgate/v1/consumer_pb.js";
import { SettleError } from "./errors.js";
import type { Op, Sender } from "./sender.js";

/** Where a delivery stands in its stream and consumer (numbers below 2^53). */
export interface Metadata {
  stream: string;
  consumer: string;
  streamSeq: number;
  consumerSeq: number;
  numDelivered: number;
  numPending: number;
  timestamp: Date | undefined;
}

/** Options of Message.nak. */
export interface NakOptions {
  /** Redeliver no sooner than this many milliseconds from now (default 0). */
  delay?: number;
}

// owner is told of every settle a message's caller asks for (the subscriber
// uses it to skip its own settle once the handler settled).
export interface MessageOwner {
  settling(m: Message, op: Op, done: Promise<void>): void;
}

/**
 * Message is one leased delivery. ack, nak, term and extend resolve once the
 * gateway confirmed them and reject with a SettleError otherwise. Calls on
 * one message run one after another, each with the token of the latest
 * Extend, so an extend and a settle never race.
 */
export class Message {
  readonly subject: string;
  readonly data: Uint8Array;
  /** Headers, each with all its values. */
  readonly headers: Record<string, string[]>;
  readonly metadata: Metadata;

  #token: string;
  #deadline: Date;
  #gen = 0; // bumped when a redelivery replaces the lease
  #tail: Promise<unknown> = Promise.resolve();
  #settled: { op: Op; arg: string | number; done: Promise<void> } | undefined;
  readonly #sender: Sender;
  #owner: MessageOwner | undefined;

  /** @internal */
  constructor(m: WireMessage, sender: Sender, owner?: MessageOwner) {
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
  get token(): string {
    return this.#token;
  }

  /** When the lease ends unless extended or settled. */
  get leaseDeadline(): Date {
    return this.#deadline;
  }

  /** ack acknowledges the message: it is done. */
  ack(): Promise<void> {
    return this.#settle("ack", "");
  }

  /** nak hands the message back for redelivery, after opts.delay ms. */
  nak(opts: NakOptions = {}): Promise<void> {
    return this.#settle("nak", Math.max(0, Math.round(opts.delay ?? 0)));
  }

  /** term ends the message for good (dead-lettered where configured). */
  term(reason = ""): Promise<void> {
    return this.#settle("term", reason);
  }

  /**
   * extend restarts the lease's clock at the consumer's full ack_wait. It
   * resolves with the new deadline; the new token it brings is used from
   * then on.
   */
  extend(): Promise<Date> {
    if (this.#settled) {
      return Promise.reject(new SettleError("LEASE_SETTLED", Code.FailedPrecondition, "the message was settled"));
    }
    return this.#enqueue(async () => {
      const gen = this.#gen;
      const e = await this.#sender.send(this.metadata.stream, this.metadata.consumer, "extend", this.#token, this.#deadline.getTime());
      if (e && gen === this.#gen) {
        this.#token = e.token;
        this.#deadline = e.deadline;
      }
      return e ? e.deadline : this.#deadline;
    });
  }

  /** @internal settled reports whether a settle was asked for. */
  get settleAsked(): boolean {
    return this.#settled !== undefined;
  }

  /**
   * @internal adopt makes a redelivery of this message (same stream
   * sequence) the lease this object settles.
   */
  adopt(m: WireMessage): void {
    this.#gen++;
    this.#token = m.token;
    this.#deadline = m.leaseDeadline ? timestampDate(m.leaseDeadline) : this.#deadline;
    this.metadata.numDelivered = Number(m.metadata?.numDelivered ?? this.metadata.numDelivered);
  }

  /** @internal settleBy settles with an argument as the subscriber computed it. */
  settleBy(op: Exclude<Op, "extend">, arg: string | number): Promise<void> {
    return this.#settle(op, arg);
  }

  #settle(op: Exclude<Op, "extend">, arg: string | number): Promise<void> {
    const s = this.#settled;
    if (s) {
      if (s.op === op && s.arg === arg) {
        return s.done;
      }
      return Promise.reject(new SettleError("LEASE_SETTLED", Code.FailedPrecondition, `already ${s.op}ed`));
    }
    const done = this.#enqueue(async () => {
      await this.#sender.send(this.metadata.stream, this.metadata.consumer, op, this.#token, this.#deadline.getTime(), arg);
    });
    this.#settled = { op, arg, done };
    this.#owner?.settling(this, op, done);
    done.catch(() => {
      if (this.#settled?.done === done) {
        this.#settled = undefined; // failed: a retry sends again
      }
    });
    return done;
  }

  #enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.#tail.then(fn);
    this.#tail = p.catch(() => undefined);
    return p;
  }
}

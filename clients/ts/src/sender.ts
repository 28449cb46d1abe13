import { Code, type Client as RpcClient } from "@connectrpc/connect";
import { durationFromMs, timestampDate } from "@bufbuild/protobuf/wkt";
import { ConsumerService, type TokenFailure } from "./gen/jetgate/v1/consumer_pb.js";
import { SettleError, reasonOf, retryable } from "./errors.js";

/** The settles a lease takes, and Extend. */
export type Op = "ack" | "nak" | "term" | "extend";

/** A lease after an Extend: its new token and deadline. */
export interface Extended {
  token: string;
  deadline: Date;
}

interface Item {
  token: string;
  deadline: number; // ms since the epoch: past it, retrying is pointless
  attempt: number;
  resolve(v: Extended | undefined): void;
  reject(e: unknown): void;
}

interface Group {
  stream: string;
  consumer: string;
  op: Op;
  arg: string | number; // nak: delay in ms; term: reason; extend: duration in ms, "" for one ack_wait
  items: Item[];
}

const maxTokens = 1000; // the gateway's bound on tokens per settle
const callTimeoutMs = 10_000;

/**
 * Sender batches settles: calls for the same stream, consumer, op and
 * argument within delayMs (or until batch tokens wait) go as one RPC, and
 * each caller learns its own token's outcome. A call that fails as a whole
 * with a retryable code is sent again with backoff until its lease's deadline.
 */
export class Sender {
  readonly #api: RpcClient<typeof ConsumerService>;
  readonly #batch: number;
  readonly #delayMs: number;
  #groups = new Map<string, Group>();
  #waiting = 0;
  #timer: NodeJS.Timeout | undefined;
  #inFlight = new Set<Promise<void>>();

  constructor(api: RpcClient<typeof ConsumerService>, batch: number, delayMs: number) {
    this.#api = api;
    this.#batch = Math.max(1, Math.min(batch, maxTokens));
    this.#delayMs = delayMs;
  }

  /** send settles one token; it resolves once the gateway confirmed it. */
  send(stream: string, consumer: string, op: Op, token: string, deadline: number, arg: string | number = ""): Promise<Extended | undefined> {
    return new Promise((resolve, reject) => {
      this.#add(stream, consumer, op, arg, { token, deadline, attempt: 0, resolve, reject });
    });
  }

  #add(stream: string, consumer: string, op: Op, arg: string | number, item: Item): void {
    const key = `${stream}\u0000${consumer}\u0000${op}\u0000${arg}`;
    let g = this.#groups.get(key);
    if (!g) {
      g = { stream, consumer, op, arg, items: [] };
      this.#groups.set(key, g);
    }
    g.items.push(item);
    this.#waiting++;
    if (this.#waiting >= this.#batch) {
      this.flush();
    } else if (!this.#timer) {
      this.#timer = setTimeout(() => this.flush(), this.#delayMs);
    }
  }

  /** flush sends everything waiting now. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const groups = [...this.#groups.values()];
    this.#groups.clear();
    this.#waiting = 0;
    for (const g of groups) {
      for (let i = 0; i < g.items.length; i += maxTokens) {
        const p = this.#call(g, g.items.slice(i, i + maxTokens));
        this.#inFlight.add(p);
        void p.finally(() => this.#inFlight.delete(p));
      }
    }
  }

  /** idle resolves once nothing is waiting, in flight, or to be sent again. */
  async idle(): Promise<void> {
    for (;;) {
      this.flush();
      if (this.#inFlight.size === 0) {
        return;
      }
      await Promise.allSettled([...this.#inFlight]);
    }
  }

  async #call(g: Group, items: Item[]): Promise<void> {
    const tokens = items.map((it) => it.token);
    const base = { stream: g.stream, consumer: g.consumer, tokens };
    const opts = { timeoutMs: callTimeoutMs };
    let failures: TokenFailure[];
    const extended = new Map<string, Extended>();
    try {
      switch (g.op) {
        case "ack":
          failures = (await this.#api.ack(base, opts)).failures;
          break;
        case "nak":
          failures = (await this.#api.nak({ ...base, delay: durationFromMs(Number(g.arg)) }, opts)).failures;
          break;
        case "term":
          failures = (await this.#api.term({ ...base, reason: String(g.arg) }, opts)).failures;
          break;
        case "extend": {
          const res = await this.#api.extend({ ...base, duration: g.arg === "" ? undefined : durationFromMs(Number(g.arg)) }, opts);
          failures = res.failures;
          for (const l of res.leases) {
            extended.set(l.token, { token: l.newToken, deadline: l.leaseDeadline ? timestampDate(l.leaseDeadline) : new Date(0) });
          }
          break;
        }
      }
    } catch (err) {
      this.#failed(g, items, err);
      return;
    }
    const failed = new Map<number, TokenFailure>();
    for (const f of failures) {
      failed.set(f.index, f);
    }
    items.forEach((it, i) => {
      const f = failed.get(i);
      if (f && (f.code === Code.Unavailable || f.code === Code.DeadlineExceeded)) {
        // The gateway or NATS could not settle this token now: sent again
        // while its lease lives, as a call that failed whole is.
        this.#again(g, [it], { reason: f.reason || "FAILED", code: f.code as Code, message: f.message }, true);
      } else if (f) {
        it.reject(new SettleError(f.reason || "FAILED", f.code as Code, f.message));
      } else if (g.op === "extend") {
        const e = extended.get(it.token);
        if (e) {
          it.resolve(e);
        } else {
          it.reject(new SettleError("NO_NEW_TOKEN", Code.Internal, "the gateway answered the extend without a new token"));
        }
      } else {
        it.resolve(undefined);
      }
    });
  }

  // failed retries a call that failed as a whole while its leases live. The
  // sender cancels none of its own calls, so a CANCELED is the transport's
  // (a replica that went away mid-call): its outcome is unknown, as an
  // UNAVAILABLE's is, and a settle may be sent again. One that cannot be
  // confirmed before its lease ends rejects with the last failure's reason,
  // not LEASE_EXPIRED: it may have taken, and then its message does not come
  // back.
  #failed(g: Group, items: Item[], err: unknown): void {
    const why = reasonOf(err);
    this.#again(g, items, why, retryable(err) || why.code === Code.Canceled);
  }

  // again sends items once more after a failure (why) while their leases
  // live, if again says it may; else, or once a lease has ended, rejects
  // them with it.
  #again(g: Group, items: Item[], why: { reason: string; code: Code; message: string }, again: boolean): void {
    const { reason, code, message } = why;
    const now = Date.now();
    for (const it of items) {
      const wait = Math.min(100 * 2 ** it.attempt, 2_000);
      if (!again) {
        it.reject(new SettleError(reason, code, message));
      } else if (now + wait >= it.deadline) {
        it.reject(new SettleError(reason, code, `the lease ended before the gateway confirmed the settle, which may have taken: ${message}`));
      } else {
        it.attempt++;
        // In flight meanwhile: a drain close waits for it (idle).
        const p = new Promise<void>((resolve) => setTimeout(() => {
          this.#add(g.stream, g.consumer, g.op, g.arg, it);
          resolve();
        }, wait));
        this.#inFlight.add(p);
        void p.finally(() => this.#inFlight.delete(p));
      }
    }
  }
}

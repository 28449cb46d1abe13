import { AsyncLocalStorage } from "node:async_hooks";
import { Code, ConnectError, type Client as RpcClient } from "@connectrpc/connect";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { ConsumerService, type Message as WireMessage } from "./gen/jetgate/v1/consumer_pb.js";
import { LeaseError, SettleError, fatalOnOpen, isFinal, reasonOf } from "./errors.js";
import { Message, type MessageOwner } from "./message.js";
import { Sender, type Op } from "./sender.js";
import { runInTraceContext } from "./trace.js";
import type { CloseOptions, Handler, SubscribeOptions, SubscriptionStats } from "./options.js";

export type { CloseOptions, Handler, SubscribeOptions, SubscriptionStats } from "./options.js";

type State = "waiting" | "running" | "finished";

// Conn is one Consume stream: the room it was opened with and what it
// delivered that is still held.
interface Conn {
  window: number;
  windowBytes?: number;
  count: number;
  bytes: number;
  alive: boolean;
  heard: boolean; // it answered at least once
  abort: AbortController;
}

interface Entry {
  conn: Conn; // the stream whose lease it is
  msg: Message;
  seq: number;
  size: number;
  receivedAt: number;
  lead: number; // extend this long before the deadline
  state: State;
  held: boolean;
  extending: boolean;
  letGo: boolean;
  settleDone: boolean;
  retired: boolean;
}

// A handler's outcome kept for its message's redelivery, and how to report
// its refused settle if none comes.
interface Outcome {
  op: Exclude<Op, "extend">;
  arg: string | number;
  report: () => void;
  timer: NodeJS.Timeout | undefined;
}

const settleDelayMs = 5;
// How long a refused handler's outcome waits for its message's redelivery.
const outcomeKeepMs = 60_000;

// The subscription whose handler runs in this async context: a close that a
// handler awaits must not wait for that handler.
// (A timer or promise the handler left behind keeps the context after the
// handler returned: running says whether it still runs.)
const handlerScope = new AsyncLocalStorage<{ sub: Subscription; running: boolean }>();

/**
 * Subscription runs a handler on a consumer's messages over Consume streams:
 * one, and after a stream breaks, the next at once with the room the
 * messages still in hand leave, and another as they free half of it.
 * Create it with Client.subscribe; stop it with close.
 */
export class Subscription implements MessageOwner {
  /**
   * Resolves once the subscription has stopped (after close, or an error no
   * retry can mend) and, after a close, what it held is handed back.
   */
  readonly closed: Promise<void>;

  readonly #api: RpcClient<typeof ConsumerService>;
  readonly #stream: string;
  readonly #consumer: string;
  readonly #handler: Handler;
  readonly #o: Required<Omit<SubscribeOptions, "maxBytes" | "onError" | "retry">> & { maxBytes?: number; retryMin: number; retryMax: number };
  // A pinned_client group's pin, the subscription's own: a stream opened
  // again (the gateway restarted, a blip) keeps it, rather than wait out the
  // group's priority_timeout while the server holds it for a stream that is
  // gone. A stream that ends PIN_ID_MISMATCH (unpinned, or timed out) lets
  // it go, and the next opens without one, to be pinned anew.
  #pin = "";
  readonly #onError: (err: unknown, m?: Message) => void;
  readonly #sender: Sender;
  #entries = new Map<number, Entry>(); // by stream sequence: the lease in hand of that message
  #blocked = new Map<number, Entry[]>(); // redeliveries behind a let-go handler of the same message
  #byMsg = new WeakMap<Message, Entry>();
  #queue: Entry[] = [];
  #closing: false | "drain" | "nak" = false;
  #conns = new Set<Conn>(); // streams open, and those ended whose messages are still held
  #nextTry = 0; // when the next stream may open, after one broke
  #backoff = 100; // ms before the next stream after one that broke unheard
  #givenBack = false; // close ended the streams: nothing in hand is ours to settle
  #closeDone: Promise<void> | undefined;
  #extendTimer: NodeJS.Timeout | undefined;
  #extendAt = Infinity;
  #waiters = new Set<() => void>();
  // Outcomes of handlers whose settle jetgate refused for a void lease (their
  // stream broke), by stream sequence, for the redelivery not here yet.
  #outcomes = new Map<number, Outcome>();
  #loop: Promise<void>;
  #error: unknown;
  #stats: SubscriptionStats = {
    received: 0, acked: 0, naked: 0, termed: 0, handlerErrors: 0, settleFailures: 0, extended: 0,
    leasesDropped: 0, leasesLost: 0, returned: 0, adopted: 0, reconnects: 0, held: 0, heldBytes: 0, running: 0,
  };

  /** @internal */
  constructor(api: RpcClient<typeof ConsumerService>, stream: string, consumer: string, handler: Handler, opts: SubscribeOptions) {
    this.#api = api;
    this.#stream = stream;
    this.#consumer = consumer;
    this.#handler = handler;
    for (const [k, most] of [["minPending", Number.MAX_SAFE_INTEGER], ["minAckPending", Number.MAX_SAFE_INTEGER], ["priority", 9]] as const) {
      const v = opts[k];
      if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0 && v <= most)) {
        throw new RangeError(`subscribe: ${k} must be a whole number from 0 to ${most} (got ${v})`);
      }
    }
    // Out of range, an option is refused, not bent (a reviewer saw maxMessages
    // 0 taken for 1, and heartbeat 0 reconnect for ever).
    const whole = (k: string, v: number | undefined, least: number, most = Number.MAX_SAFE_INTEGER) => {
      if (v !== undefined && !(Number.isSafeInteger(v) && v >= least && v <= most)) {
        throw new RangeError(`subscribe: ${k} must be a whole number from ${least} to ${most} (got ${v})`);
      }
    };
    whole("maxMessages", opts.maxMessages, 1);
    whole("maxBytes", opts.maxBytes, 1);
    whole("concurrency", opts.concurrency, 1);
    whole("ackBatch", opts.ackBatch, 1, 1000); // the gateway's most tokens a request
    whole("heartbeat", opts.heartbeat, 100, 300_000); // ms, the gateway's bounds
    whole("maxLease", opts.maxLease, 1);
    whole("retry.min", opts.retry?.min, 0);
    whole("retry.max", opts.retry?.max, opts.retry?.min ?? 0);
    const maxMessages = opts.maxMessages ?? 100;
    this.#o = {
      maxMessages,
      maxBytes: opts.maxBytes,
      concurrency: opts.concurrency ?? maxMessages,
      maxLease: opts.maxLease ?? 3_600_000,
      ackBatch: opts.ackBatch ?? 100,
      heartbeat: opts.heartbeat ?? 5_000,
      retryMin: opts.retry?.min ?? 1_000,
      retryMax: opts.retry?.max ?? 600_000,
      group: opts.group ?? "",
      minPending: opts.minPending ?? 0,
      minAckPending: opts.minAckPending ?? 0,
      priority: opts.priority ?? 0,
    };
    const onError = opts.onError;
    const where = `jetgate: subscription ${stream}/${consumer}`;
    this.#onError = (err, m) => {
      if (!onError) {
        logError(where, err, m);
        return;
      }
      try {
        onError(err, m);
      } catch (e) {
        console.error(`${where}: onError threw:`, e); // reported, and the subscriber goes on
      }
    };
    this.#sender = new Sender(api, this.#o.ackBatch, settleDelayMs);
    this.#loop = this.#run();
    // Stopped means stopped and, after a close, done closing: what it gives
    // back is given back.
    const quiet = () => undefined;
    this.closed = this.#loop.then(quiet, quiet).then(() => this.#closeDone).then(quiet, quiet);
  }

  /** The error that ended the subscription (an error no retry can mend, on opening), if one did. */
  get error(): unknown {
    return this.#error;
  }

  /** A copy of the counters. */
  get stats(): SubscriptionStats {
    return { ...this.#stats };
  }

  /**
   * close stops the subscription. drain lets running handlers finish (within
   * timeout) and their settles land, then hands back everything else in
   * hand; nak hands back everything in hand at once (a handler still running
   * then settles nothing). Handing back is closing the stream, whose
   * unsettled leases the gateway naks (or, for leases of a stream that broke
   * earlier, a confirmed Nak): nothing is left to wait for ack_wait.
   * Called from one of this subscription's own handlers, it starts the close
   * and resolves at once: the drain waits for that handler too, which could
   * not finish while it awaited the drain. `closed` says when it is done.
   */
  close(opts: CloseOptions = {}): Promise<void> {
    if (!this.#closeDone) {
      this.#closeDone = this.#close(opts.mode ?? "drain", opts.timeout ?? 30_000);
    }
    const scope = handlerScope.getStore();
    if (scope?.sub === this && scope.running) {
      this.#closeDone.catch(() => undefined);
      return Promise.resolve();
    }
    return this.#closeDone.then(() => this.closed);
  }

  async #close(mode: "drain" | "nak", timeout: number): Promise<void> {
    this.#closing = mode;
    this.#notify();
    if (mode === "drain") {
      // Handlers finished, and their settles landed: one may wait behind the
      // subscriber's own extend of its lease, not yet with the sender.
      await this.#until(() => this.#stats.running === 0 && !this.#settling(), timeout);
      await this.#sender.idle();
    }
    // What is still in hand goes back. Of a stream open, ending it does
    // that: the gateway naks the stream's unsettled leases once its pull has
    // ended. A nak sent while that pull is open would bring the message
    // straight back into it, a delivery burnt. Leases of a stream that broke
    // earlier are nak'ed here, and so are those a handler extended by a
    // duration: the gateway keeps them alive past their stream's end.
    const live = new Set([...this.#conns].filter((c) => c.alive && c.heard));
    this.#givenBack = true;
    for (const c of this.#conns) {
      c.abort.abort();
    }
    this.#notify();
    await this.#loop;
    const left = [...this.#inHand()].filter((e) => e.held && !e.msg.settleAsked);
    const naks: Entry[] = [];
    for (const e of left) {
      if (live.has(e.conn) && !e.msg.keptAlive) {
        this.#stats.returned++;
      } else {
        naks.push(e);
      }
      this.#unhold(e);
    }
    await Promise.allSettled(naks.map((e) => e.msg.settleBy("nak", 0)));
    for (const o of this.#outcomes.values()) {
      clearTimeout(o.timer);
      o.report(); // its redelivery never came
    }
    this.#outcomes.clear();
    clearTimeout(this.#extendTimer);
    this.#extendTimer = undefined;
  }

  // settling reports whether a finished handler's settle is on its way.
  #settling(): boolean {
    for (const e of this.#inHand()) {
      if (e.state === "finished" && e.msg.settleAsked && !e.settleDone) {
        return true;
      }
    }
    return false;
  }

  *#inHand(): Iterable<Entry> {
    yield* this.#entries.values();
    for (const es of this.#blocked.values()) {
      yield* es;
    }
  }

  // run keeps Consume streams open, as Python's library does: one while
  // none is, with the room that the messages in hand leave (those of a
  // stream that broke stay in hand, extended and settled by their tokens),
  // and one more while one is, once half the room is free. A stream that
  // breaks is followed by the next after a backoff.
  async #run(): Promise<void> {
    const readers = new Set<Promise<void>>();
    while (!this.#closing) {
      const room = this.#room();
      const wait = this.#nextTry - Date.now();
      if (room && wait <= 0) {
        const c: Conn = { window: room[0], windowBytes: room[1], count: 0, bytes: 0, alive: true, heard: false, abort: new AbortController() };
        this.#conns.add(c);
        const r: Promise<void> = this.#read(c).finally(() => readers.delete(r));
        readers.add(r);
        continue;
      }
      if (room) {
        await this.#until(() => this.#closing !== false, wait); // the backoff after a break
      } else {
        await this.#until(() => this.#closing !== false || this.#room() !== undefined, Infinity);
      }
    }
    await Promise.all(readers); // close ends them once it may
  }

  // room is the room of a stream to open now: what no stream has taken (a
  // stream open takes its window, or what it holds if more; one ended what
  // it still holds), if at least one message's while none is open, else
  // half the limits.
  #room(): [number, number | undefined] | undefined {
    let n = 0;
    let b = 0;
    let alive = false;
    for (const c of this.#conns) {
      alive ||= c.alive;
      n += c.alive ? Math.max(c.window, c.count) : c.count;
      b += c.alive ? Math.max(c.windowBytes ?? 0, c.bytes) : c.bytes;
    }
    const { maxMessages, maxBytes } = this.#o;
    const free = maxMessages - n;
    const freeBytes = maxBytes === undefined ? undefined : maxBytes - b;
    const need = alive ? Math.max(1, Math.floor(maxMessages / 2)) : 1;
    const needBytes = maxBytes === undefined ? 0 : alive ? Math.max(1, Math.floor(maxBytes / 2)) : 1;
    return free >= need && (freeBytes === undefined || freeBytes >= needBytes) ? [free, freeBytes] : undefined;
  }

  // read reads stream c until it ends, and says when the next may open.
  async #read(c: Conn): Promise<void> {
    let err: unknown = new ConnectError("the stream ended");
    let pin = this.#pin; // this stream's
    let watchdog: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => c.abort.abort(new ConnectError("no heartbeat from the stream")), 3 * this.#o.heartbeat);
    };
    try {
      arm();
      const responses = this.#api.consume({
        stream: this.#stream,
        consumer: this.#consumer,
        maxMessages: c.window,
        maxBytes: c.windowBytes !== undefined ? BigInt(c.windowBytes) : undefined,
        heartbeat: durationFromMs(this.#o.heartbeat),
        group: this.#o.group,
        minPending: BigInt(this.#o.minPending),
        minAckPending: BigInt(this.#o.minAckPending),
        priority: this.#o.priority,
        pinId: pin,
      }, { signal: c.abort.signal });
      for await (const res of responses) {
        arm();
        c.heard = true;
        this.#backoff = 100;
        if (res.pinId) {
          this.#pin = pin = res.pinId;
        }
        this.#receive(c, res.messages);
      }
    } catch (e) {
      err = e;
    } finally {
      clearTimeout(watchdog);
      c.alive = false;
      if (c.count === 0) {
        this.#conns.delete(c);
      }
      this.#notify();
    }
    if (this.#closing) {
      return;
    }
    const { reason, code } = reasonOf(err);
    let unpinned = false;
    if (reason === "PIN_ID_MISMATCH" && this.#pin === pin) {
      this.#pin = ""; // lost: the next stream waits to be pinned again
    } else if (!c.heard && code === Code.InvalidArgument && pin !== "") {
      // A pin the consumer takes no more (its policy was changed from
      // pinned_client): let go, and tried once more without it before the
      // error ends the subscription.
      if (this.#pin === pin) {
        this.#pin = "";
      }
      unpinned = true;
    }
    // A message larger than maxBytes itself (the stream's window was the
    // whole limit): no stream could ever take it.
    const tooLarge = reason === "MESSAGE_TOO_LARGE" && this.#o.maxBytes !== undefined && (c.windowBytes ?? 0) >= this.#o.maxBytes;
    if ((tooLarge || (!c.heard && !unpinned && fatalOnOpen(err))) && !c.abort.signal.aborted) {
      this.#error = err;
      this.#onError(err);
      void this.close({ mode: "nak" });
      return;
    }
    this.#onError(err);
    this.#stats.reconnects++;
    const wait = c.heard ? 100 : this.#backoff;
    if (!c.heard) {
      this.#backoff = Math.min(this.#backoff * 2, 5_000);
    }
    this.#nextTry = Math.max(this.#nextTry, Date.now() + wait * (0.5 + Math.random() / 2));
    this.#notify();
  }

  #receive(c: Conn, ms: WireMessage[]): void {
    const now = Date.now();
    const leased: Entry[] = [];
    for (const wm of ms) {
      this.#stats.received++;
      const seq = Number(wm.metadata?.streamSeq ?? 0n);
      const cur = this.#entries.get(seq);
      if (cur && !cur.letGo && cur.state !== "finished" && !cur.msg.settleAsked) {
        // A redelivery of a message in hand (its lease ran out): the handler
        // that has it settles the new lease, and no second handler starts.
        cur.msg.adopt(wm);
        this.#stats.adopted++;
        this.#unhold(cur); // its lease is the new stream's now
        cur.conn = c;
        this.#hold(cur);
        leased.push(cur);
        continue;
      }
      const msg = new Message(wm, this.#sender, this);
      const leaseMs = msg.leaseDeadline.getTime() - now;
      const e: Entry = {
        conn: c, msg, seq, size: sizeOf(wm), receivedAt: now, lead: Math.max(leaseMs / 3, 20),
        state: "waiting", held: false, extending: false, letGo: false, settleDone: false, retired: false,
      };
      this.#byMsg.set(msg, e);
      this.#hold(e);
      leased.push(e);
      if (cur) {
        const behind = this.#blocked.get(seq) ?? [];
        behind.push(e);
        this.#blocked.set(seq, behind);
      } else {
        this.#entries.set(seq, e);
        const o = this.#outcome(seq);
        if (o) {
          this.#settleFor(e, o.op, o.arg); // its handler ran and finished on the void lease
        } else {
          this.#queue.push(e);
        }
      }
    }
    this.#dispatch();
    for (const e of leased) {
      this.#armAt(e.msg.leaseDeadline.getTime() - e.lead);
    }
  }

  #dispatch(): void {
    while (!this.#closing && this.#stats.running < this.#o.concurrency && this.#queue.length > 0) {
      const e = this.#queue.shift()!;
      if (e.state === "waiting" && e.held) {
        void this.#runHandler(e);
      }
    }
  }

  async #runHandler(e: Entry): Promise<void> {
    e.state = "running";
    this.#stats.running++;
    let op: Exclude<Op, "extend"> = "ack";
    let arg: string | number = "";
    try {
      const scope = { sub: this as Subscription, running: true };
      try {
        await handlerScope.run(scope, () => runInTraceContext(e.msg.headers, () => this.#handler(e.msg)));
      } finally {
        scope.running = false;
      }
    } catch (err) {
      this.#stats.handlerErrors++;
      this.#onError(err, e.msg);
      if (isFinal(err)) {
        op = "term";
        arg = err instanceof Error ? err.message : String(err);
      } else {
        op = "nak";
        const n = Math.max(1, e.msg.metadata.numDelivered);
        arg = Math.min(this.#o.retryMin * 2 ** Math.min(n - 1, 30), this.#o.retryMax);
      }
    }
    this.#stats.running--;
    e.state = "finished";
    this.#unhold(e);
    if (!e.msg.settleAsked && !this.#givenBack) {
      e.msg.settleBy(op, arg).catch(() => undefined); // reported through settling
    }
    this.#retire(e);
    this.#dispatch();
    this.#notify();
  }

  /** @internal MessageOwner: every confirmed extend, the handler's own and the subscriber's. */
  extended(m: Message): void {
    if (this.#byMsg.has(m)) {
      this.#stats.extended++;
    }
  }

  /** @internal MessageOwner: every settle of a subscriber's message passes here. */
  settling(m: Message, op: Op, done: Promise<void>, arg: string | number): void {
    const e = this.#byMsg.get(m);
    if (!e) {
      return;
    }
    done.then(() => {
      if (op === "ack") this.#stats.acked++;
      else if (op === "nak") this.#stats.naked++;
      else if (op === "term") this.#stats.termed++;
    }, (err: unknown) => {
      if (op !== "extend" && this.#takeOver(e, op, arg, err)) {
        return;
      }
      this.#failed(err, m);
    }).finally(() => {
      e.settleDone = true;
      this.#unhold(e);
      this.#retire(e);
      this.#dispatch(); // a redelivery behind it may run now
      this.#notify();
    });
  }

  // takeOver gives a finished handler's outcome to the redelivery of its
  // message, when jetgate refused the handler's settle because its lease was
  // void: the stream it came on broke, and jetgate nak'ed what that stream
  // held. The redelivery comes on the next stream only once there is room,
  // so it is often behind the finished handler, or not here yet: then the
  // outcome waits for it, and the failure is reported only if none comes
  // within outcomeKeepMs (or before close). It reports whether it took the
  // failure.
  #takeOver(e: Entry, op: Exclude<Op, "extend">, arg: string | number, err: unknown): boolean {
    if (e.letGo || e.state !== "finished" || this.#givenBack || !(err instanceof SettleError) ||
      (err.reason !== "LEASE_EXPIRED" && err.reason !== "LEASE_SETTLED")) {
      return false;
    }
    const next = this.#blocked.get(e.seq)?.find((b) => b.state === "waiting" && b.held && !b.msg.settleAsked);
    if (next) {
      this.#settleFor(next, op, arg);
      return true;
    }
    const kept: Outcome = { op, arg, report: () => this.#failed(err, e.msg), timer: undefined };
    kept.timer = setTimeout(() => {
      if (this.#outcomes.get(e.seq) === kept) {
        this.#outcomes.delete(e.seq);
        kept.report();
      }
    }, outcomeKeepMs);
    kept.timer.unref();
    this.#outcomes.get(e.seq)?.report(); // an older one's redelivery did not come
    this.#outcomes.set(e.seq, kept);
    return true;
  }

  #failed(err: unknown, m: Message): void {
    this.#stats.settleFailures++;
    this.#onError(err, m);
  }

  // settleFor settles a redelivery with the outcome of the handler that ran
  // its message, instead of running it again.
  #settleFor(e: Entry, op: Exclude<Op, "extend">, arg: string | number): void {
    e.state = "finished"; // never dispatched
    this.#stats.adopted++;
    e.msg.settleBy(op, arg).catch(() => undefined); // reported through settling
  }

  // outcome takes the outcome kept for a redelivery of seq, if one is.
  #outcome(seq: number): Outcome | undefined {
    const o = this.#outcomes.get(seq);
    if (o) {
      clearTimeout(o.timer);
      this.#outcomes.delete(seq);
    }
    return o;
  }

  #hold(e: Entry): void {
    if (!e.held) {
      e.held = true;
      this.#stats.held++;
      this.#stats.heldBytes += e.size;
      e.conn.count++;
      e.conn.bytes += e.size;
    }
  }

  #unhold(e: Entry): void {
    if (e.held) {
      e.held = false;
      this.#stats.held--;
      this.#stats.heldBytes -= e.size;
      const c = e.conn;
      c.count--;
      c.bytes -= e.size;
      if (!c.alive && c.count === 0) {
        this.#conns.delete(c); // its room is free
      }
    }
  }

  // retire forgets an entry that no handler runs and nothing settles any
  // more, and lets the next delivery of the same message through.
  #retire(e: Entry): void {
    if (e.retired || e.state === "running" || (e.state === "waiting" && e.held)) {
      return;
    }
    if (e.state === "finished" && e.msg.settleAsked && !e.settleDone && !e.letGo) {
      return; // its settle is on the way
    }
    e.retired = true;
    if (this.#entries.get(e.seq) !== e) {
      const behind = this.#blocked.get(e.seq);
      const i = behind?.indexOf(e) ?? -1;
      if (behind && i >= 0) {
        behind.splice(i, 1);
      }
      return;
    }
    this.#entries.delete(e.seq);
    const behind = this.#blocked.get(e.seq);
    const next = behind?.shift();
    if (behind && behind.length === 0) {
      this.#blocked.delete(e.seq);
    }
    if (next) {
      this.#entries.set(e.seq, next);
      this.#queue.unshift(next);
    }
  }

  // armExtend sets the timer for the earliest lease that needs extending.
  #armExtend(): void {
    if (this.#givenBack) {
      return;
    }
    let next = Infinity;
    for (const e of this.#inHand()) {
      if (e.held && !e.extending && !e.msg.settleAsked) {
        next = Math.min(next, e.msg.leaseDeadline.getTime() - e.lead);
      }
    }
    this.#armAt(next);
  }

  // armAt makes sure the extension timer fires no later than at.
  #armAt(at: number): void {
    if (this.#givenBack || at === Infinity || (this.#extendTimer && this.#extendAt <= at)) {
      return;
    }
    clearTimeout(this.#extendTimer);
    this.#extendAt = at;
    this.#extendTimer = setTimeout(() => this.#extendDue(), Math.max(0, at - Date.now()));
  }

  // extendDue extends every held lease near its deadline (one batched
  // Extend), and lets go of those held for maxLease.
  #extendDue(): void {
    this.#extendTimer = undefined;
    this.#extendAt = Infinity;
    const now = Date.now();
    for (const e of [...this.#inHand()]) {
      if (!e.held || e.extending || e.msg.settleAsked || e.msg.leaseDeadline.getTime() - now > e.lead * 1.25) {
        continue;
      }
      if (now + e.lead >= e.receivedAt + this.#o.maxLease) {
        this.#letGo(e, "MAX_LEASE", `held for ${this.#o.maxLease}ms (maxLease), let go`);
        continue;
      }
      e.extending = true;
      const token = e.msg.token;
      e.msg.extend().then(undefined, (err: unknown) => {
        if (e.msg.token === token && !e.msg.settleAsked && e.held) {
          const reason = err instanceof SettleError ? err.reason : "FAILED";
          this.#letGo(e, "LEASE_LOST", `extend failed: ${reason}`);
        }
      }).finally(() => {
        e.extending = false;
        this.#armAt(e.msg.leaseDeadline.getTime() - e.lead);
      });
    }
    this.#armExtend();
  }

  #letGo(e: Entry, reason: "MAX_LEASE" | "LEASE_LOST", why: string): void {
    if (reason === "MAX_LEASE") {
      e.letGo = true;
      this.#stats.leasesDropped++;
    } else {
      this.#stats.leasesLost++;
    }
    this.#unhold(e);
    this.#onError(new LeaseError(reason, e.seq, why), e.msg);
    if (e.state === "waiting") {
      e.state = "finished"; // never run: the lease is not ours any more
    }
    this.#retire(e);
    this.#notify();
  }

  #notify(): void {
    for (const w of [...this.#waiters]) {
      w();
    }
  }

  // until waits for pred (checked on every change) for at most ms.
  async #until(pred: () => boolean, ms: number): Promise<boolean> {
    const end = Date.now() + ms;
    while (!pred()) {
      const left = end - Date.now();
      if (left <= 0) {
        return false;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          this.#waiters.delete(done);
          resolve();
        };
        const t = Number.isFinite(left) ? setTimeout(done, left) : undefined;
        this.#waiters.add(done);
      });
    }
    return true;
  }
}

// logError is what a subscription without onError does with an error: the
// handler's own errors with their stacks, the library's as one line.
function logError(where: string, err: unknown, m?: Message): void {
  const about = m ? `message #${m.metadata.streamSeq} (delivery ${m.metadata.numDelivered})` : "stream";
  const own = err instanceof SettleError || err instanceof LeaseError || err instanceof ConnectError;
  console.error(`${where}, ${about}:`, own ? String(err) : err);
}

// sizeOf counts a message as the gateway counts it against max_bytes.
function sizeOf(m: WireMessage): number {
  let n = Buffer.byteLength(m.subject) + m.data.length;
  for (const [k, v] of Object.entries(m.headers)) {
    for (const x of v.values) {
      n += Buffer.byteLength(k) + Buffer.byteLength(x) + 4;
    }
  }
  return n;
}

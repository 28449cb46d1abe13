import type { SecureClientSessionOptions } from "node:http2";
import { createClient, type Client as RpcClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { durationFromMs, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ConsumerService } from "./gen/jetgate/v1/consumer_pb.js";
import { StreamService } from "./gen/jetgate/v1/stream_pb.js";
import { configPb, maskPaths, seekTargetPb, type ConsumerConfigInput, type SeekTarget } from "./admin.js";
import {
  consumerConfig, consumerInfo, consumerState, consumerSummary, deadLetterPage, emptyReasonName, leases, redriveResult,
  streamSummary, type ConsumerInfo, type ConsumerResult, type ConsumerSummary, type DeadLetterPage, type EmptyReasonName,
  type Leases, type PauseState, type RedriveResult, type SeekResult, type StreamSummary,
} from "./info.js";
import { Message } from "./message.js";
import { Sender } from "./sender.js";
import { Subscription, type Handler, type SubscribeOptions } from "./subscriber.js";

/** TLS settings of the connection to jetgate (PEM strings or buffers). */
export interface TlsOptions {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  servername?: string;
}

/** Options of a Client. */
export interface ClientOptions {
  /** host:port of jetgate's gRPC listener (or a URL, http:// or https://). */
  address: string;
  /** Sent as `authorization: Bearer <apiKey>` on every call. */
  apiKey?: string;
  /** true: TLS with the system's roots; an object: TLS with these settings. */
  tls?: boolean | TlsOptions;
  /** connect interceptors run on every call (after the API key's). */
  interceptors?: Interceptor[];
}

/** Options of Client.publish. */
export interface PublishOptions {
  headers?: Record<string, string | string[]>;
  /** Deduplication id (Nats-Msg-Id). */
  msgId?: string;
  /** The message's own time to live, in ms (streams with allow_msg_ttl). */
  ttl?: number;
}

/** What Client.publish returns: the stream's acknowledgement. */
export interface PublishAck {
  stream: string;
  seq: number;
  duplicate: boolean;
}

/** One message of Client.publishBatch. */
export interface BatchMessage {
  subject: string;
  data: Uint8Array | string;
  headers?: Record<string, string | string[]>;
  /** The message's own time to live, in ms. */
  ttl?: number;
}

/** What Client.publishBatch returns: each message's sequence, in order. */
export interface BatchAck {
  stream: string;
  seqs: number[];
}

/** Options of Client.fetch. */
export interface FetchOptions {
  /** Up to this many messages (default 1). */
  batch?: number;
  /** Wait up to this many ms for the first message (default 5000; 0: return at once). */
  expires?: number;
  maxBytes?: number;
  /** The consumer's priority group (unset: its only one). */
  group?: string;
  /** Overflow policy: only while at least this many are pending. */
  minPending?: number;
  /** Overflow policy: only while at least this many acks are pending. */
  minAckPending?: number;
  /** Prioritized policy: 0 is served first, 9 last. */
  priority?: number;
  /** Pinned-client policy: the pin of an earlier fetch (its pinId). */
  pinId?: string;
}

/** What Client.fetch returns: the messages, with why none came and the pin given. */
export interface FetchResult extends Array<Message> {
  /** "" when messages came; else why none did (NO_MESSAGES, PAUSED, PINNED, …). */
  readonly emptyReason: EmptyReasonName;
  /** Pinned-client policy: the pin to send with the next fetch. */
  readonly pinId: string;
}

/** Options of Client.pause: one of them. */
export interface PauseOptions {
  /** Paused until then. */
  until?: Date;
  /** Paused for this many ms from now. */
  duration?: number;
}

/** Options of Client.listDeadLetters. */
export interface DeadLetterPageOptions {
  /** At most this many (default 20, at most 100). */
  pageSize?: number;
  /** The nextPageToken of the previous page. */
  pageToken?: string;
}

function headersPb(h: Record<string, string | string[]> | undefined): Record<string, { values: string[] }> {
  const out: Record<string, { values: string[] }> = {};
  for (const [k, v] of Object.entries(h ?? {})) {
    out[k] = { values: Array.isArray(v) ? v : [v] };
  }
  return out;
}

const bytes = (d: Uint8Array | string): Uint8Array => (typeof d === "string" ? new TextEncoder().encode(d) : d);

const unaryTimeoutMs = 30_000;

/** Client is a connection to jetgate over gRPC (HTTP/2). */
export class Client {
  /** The generated connect clients, with protobuf's own types (bigint for 64-bit fields). */
  readonly consumers: RpcClient<typeof ConsumerService>;
  readonly streams: RpcClient<typeof StreamService>;
  readonly #session: Http2SessionManager;
  readonly #sender: Sender;

  constructor(opts: ClientOptions) {
    const secure = opts.tls !== undefined && opts.tls !== false;
    const baseUrl = /^https?:\/\//.test(opts.address) ? opts.address : `${secure ? "https" : "http"}://${opts.address}`;
    const tls = typeof opts.tls === "object" ? opts.tls : {};
    const nodeOptions: SecureClientSessionOptions = secure ? { ca: tls.ca, cert: tls.cert, key: tls.key, servername: tls.servername } : {};
    this.#session = new Http2SessionManager(baseUrl, { pingIntervalMs: 10_000, pingTimeoutMs: 5_000 }, nodeOptions);
    const interceptors: Interceptor[] = [];
    if (opts.apiKey) {
      const bearer = `Bearer ${opts.apiKey}`;
      interceptors.push((next) => (req) => {
        req.header.set("authorization", bearer);
        return next(req);
      });
    }
    interceptors.push(...(opts.interceptors ?? []));
    const transport = createGrpcTransport({ baseUrl, sessionManager: this.#session, interceptors });
    this.consumers = createClient(ConsumerService, transport);
    this.streams = createClient(StreamService, transport);
    this.#sender = new Sender(this.consumers, 100, 1);
  }

  /** publish stores one message in a stream and resolves with its sequence. */
  async publish(stream: string, subject: string, data: Uint8Array | string, opts: PublishOptions = {}): Promise<PublishAck> {
    const res = await this.streams.publish({
      stream,
      subject,
      data: bytes(data),
      headers: headersPb(opts.headers),
      msgId: opts.msgId ?? "",
      ttl: opts.ttl !== undefined ? durationFromMs(opts.ttl) : undefined,
    }, { timeoutMs: unaryTimeoutMs });
    return { stream: res.stream, seq: Number(res.seq), duplicate: res.duplicate };
  }

  /** publishBatch stores messages all or none (a stream with allow_atomic). */
  async publishBatch(stream: string, messages: BatchMessage[]): Promise<BatchAck> {
    const res = await this.streams.publishBatch({
      stream,
      messages: messages.map((m) => ({
        subject: m.subject,
        data: bytes(m.data),
        headers: headersPb(m.headers),
        ttl: m.ttl !== undefined ? durationFromMs(m.ttl) : undefined,
      })),
    }, { timeoutMs: unaryTimeoutMs });
    return { stream: res.stream, seqs: res.seqs.map(Number) };
  }

  /** fetch leases up to opts.batch messages; none within opts.expires is an empty list. */
  async fetch(stream: string, consumer: string, opts: FetchOptions = {}): Promise<FetchResult> {
    const expires = opts.expires ?? 5_000;
    const res = await this.consumers.fetch({
      stream,
      consumer,
      batch: opts.batch ?? 1,
      expires: durationFromMs(expires),
      maxBytes: opts.maxBytes !== undefined ? BigInt(opts.maxBytes) : undefined,
      group: opts.group ?? "",
      minPending: BigInt(opts.minPending ?? 0),
      minAckPending: BigInt(opts.minAckPending ?? 0),
      priority: opts.priority ?? 0,
      pinId: opts.pinId ?? "",
    }, { timeoutMs: expires + unaryTimeoutMs });
    const msgs = res.messages.map((m) => new Message(m, this.#sender));
    return Object.defineProperties(msgs, {
      emptyReason: { value: emptyReasonName(res.emptyReason) },
      pinId: { value: res.pinId },
    }) as FetchResult;
  }

  /** getConsumer is the consumer's configuration and live state. */
  async getConsumer(stream: string, consumer: string): Promise<ConsumerInfo> {
    return consumerInfo(await this.consumers.getConsumer({ stream, consumer }, { timeoutMs: unaryTimeoutMs }));
  }

  /** pause stops the server delivering the consumer's messages, for every client, until or for a while. */
  async pause(stream: string, consumer: string, opts: PauseOptions): Promise<PauseState> {
    if ((opts.until === undefined) === (opts.duration === undefined)) {
      throw new RangeError("pause takes until (a Date) or duration (ms from now), one of them");
    }
    const until = opts.until ?? new Date(Date.now() + (opts.duration ?? 0));
    const res = await this.consumers.pause({ stream, consumer, pauseUntil: timestampFromDate(until) }, { timeoutMs: unaryTimeoutMs });
    return { paused: res.paused, pauseUntil: res.pauseUntil ? timestampDate(res.pauseUntil) : undefined };
  }

  /** resume lets a paused consumer deliver again at once. */
  async resume(stream: string, consumer: string): Promise<PauseState> {
    const res = await this.consumers.resume({ stream, consumer }, { timeoutMs: unaryTimeoutMs });
    return { paused: res.paused };
  }

  /** unpin releases the pinned client of a pinned_client priority group (unset: the consumer's only group). */
  async unpin(stream: string, consumer: string, opts: { group?: string } = {}): Promise<void> {
    await this.consumers.unpin({ stream, consumer, group: opts.group ?? "" }, { timeoutMs: unaryTimeoutMs });
  }

  /**
   * seek moves where the consumer delivers from, for every client: to a
   * stream sequence ({ sequence }), to the first message stored at or after
   * a time ({ time }), or to its ack floor ({ ackFloor: true }: everything
   * not acknowledged comes again, now). Leases held on it are void. Needs
   * nats-server 2.14 or later (else FAILED_PRECONDITION, SEEK_UNSUPPORTED).
   */
  async seek(stream: string, consumer: string, to: SeekTarget): Promise<SeekResult> {
    const target = seekTargetPb(to);
    const res = await this.consumers.seek({ stream, consumer, target }, { timeoutMs: unaryTimeoutMs });
    return { resetSequence: Number(res.resetSequence), state: consumerState(res.state) };
  }

  /**
   * createConsumer creates a durable pull consumer with explicit acks (its
   * name is config.durableName), within the gateway's admin bounds; every
   * replica serves it at once.
   */
  async createConsumer(stream: string, config: ConsumerConfigInput): Promise<ConsumerResult> {
    const res = await this.consumers.createConsumer({ stream, config: configPb(config) }, { timeoutMs: unaryTimeoutMs });
    return { config: consumerConfig(res.config), state: consumerState(res.state) };
  }

  /**
   * updateConsumer sets the fields updateMask names (["ackWait"], or
   * "ackWait,maxDeliver") of a consumer created through the API to their
   * values in config.
   */
  async updateConsumer(stream: string, consumer: string, config: ConsumerConfigInput, updateMask: string | string[]): Promise<ConsumerResult> {
    const req = { stream, consumer, config: configPb(config), updateMask: { paths: maskPaths(updateMask) } };
    const res = await this.consumers.updateConsumer(req, { timeoutMs: unaryTimeoutMs });
    return { config: consumerConfig(res.config), state: consumerState(res.state) };
  }

  /** deleteConsumer deletes a consumer created through the API: its leases are void, its waiting callers answered. */
  async deleteConsumer(stream: string, consumer: string): Promise<void> {
    await this.consumers.deleteConsumer({ stream, consumer }, { timeoutMs: unaryTimeoutMs });
  }

  /**
   * redrive puts dead letters back on their subjects: opts.seqs (their
   * sequences in the dead-letter stream), or all of the consumer's.
   */
  async redrive(stream: string, consumer: string, opts: { seqs?: number[] } = {}): Promise<RedriveResult> {
    const seqs = (opts.seqs ?? []).map((s) => BigInt(s));
    return redriveResult(await this.consumers.redrive({ stream, consumer, seqs }, { timeoutMs: unaryTimeoutMs }));
  }

  /** listStreams lists the streams this gateway serves consumers of that the caller may read. */
  async listStreams(): Promise<StreamSummary[]> {
    return (await this.streams.listStreams({}, { timeoutMs: unaryTimeoutMs })).streams.map(streamSummary);
  }

  /** listConsumers lists the stream's consumers this gateway serves, with the backlog of each. */
  async listConsumers(stream: string): Promise<ConsumerSummary[]> {
    return (await this.consumers.listConsumers({ stream }, { timeoutMs: unaryTimeoutMs })).consumers.map(consumerSummary);
  }

  /** listLeases says who holds the consumer's live leases, across every replica. */
  async listLeases(stream: string, consumer: string): Promise<Leases> {
    return leases(await this.consumers.listLeases({ stream, consumer }, { timeoutMs: unaryTimeoutMs }));
  }

  /** listDeadLetters is a page of the consumer's dead letters, oldest first. */
  async listDeadLetters(stream: string, consumer: string, opts: DeadLetterPageOptions = {}): Promise<DeadLetterPage> {
    const res = await this.consumers.listDeadLetters(
      { stream, consumer, pageSize: opts.pageSize ?? 0, pageToken: opts.pageToken ?? "" },
      { timeoutMs: unaryTimeoutMs },
    );
    return deadLetterPage(res);
  }

  /**
   * subscribe runs handler on each message of the consumer, over a Consume
   * stream: resolved, the message is acked; rejected, nak'ed with a growing
   * delay (or termed, for a FinalError). See SubscribeOptions.
   */
  subscribe(stream: string, consumer: string, handler: Handler, opts: SubscribeOptions = {}): Subscription {
    return new Subscription(this.consumers, stream, consumer, handler, opts);
  }

  /** close ends the connection; close subscriptions first. */
  close(): void {
    this.#session.abort();
  }
}

import type { SecureClientSessionOptions } from "node:http2";
import { createClient, type Client as RpcClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { ConsumerService, type GetConsumerResponse } from "./gen/jetgate/v1/consumer_pb.js";
import { StreamService } from "./gen/jetgate/v1/stream_pb.js";
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

/** Options of Client.fetch. */
export interface FetchOptions {
  /** Up to this many messages (default 1). */
  batch?: number;
  /** Wait up to this many ms for the first message (default 5000; 0: return at once). */
  expires?: number;
  maxBytes?: number;
}

const unaryTimeoutMs = 30_000;

/** Client is a connection to jetgate over gRPC (HTTP/2). */
export class Client {
  /** The generated connect clients, for calls this class does not wrap. */
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
    const headers: Record<string, { values: string[] }> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) {
      headers[k] = { values: Array.isArray(v) ? v : [v] };
    }
    const res = await this.streams.publish({
      stream,
      subject,
      data: typeof data === "string" ? new TextEncoder().encode(data) : data,
      headers,
      msgId: opts.msgId ?? "",
      ttl: opts.ttl !== undefined ? durationFromMs(opts.ttl) : undefined,
    }, { timeoutMs: unaryTimeoutMs });
    return { stream: res.stream, seq: Number(res.seq), duplicate: res.duplicate };
  }

  /** fetch leases up to opts.batch messages; none within opts.expires is an empty list. */
  async fetch(stream: string, consumer: string, opts: FetchOptions = {}): Promise<Message[]> {
    const expires = opts.expires ?? 5_000;
    const res = await this.consumers.fetch({
      stream,
      consumer,
      batch: opts.batch ?? 1,
      expires: durationFromMs(expires),
      maxBytes: opts.maxBytes !== undefined ? BigInt(opts.maxBytes) : undefined,
    }, { timeoutMs: expires + unaryTimeoutMs });
    return res.messages.map((m) => new Message(m, this.#sender));
  }

  /** getConsumer is the consumer's configuration and live state. */
  getConsumer(stream: string, consumer: string): Promise<GetConsumerResponse> {
    return this.consumers.getConsumer({ stream, consumer }, { timeoutMs: unaryTimeoutMs });
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

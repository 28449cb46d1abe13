import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { ConsumerService } from "./gen/jetgate/v1/consumer_pb.js";
import { StreamService } from "./gen/jetgate/v1/stream_pb.js";
import { Message } from "./message.js";
import { Sender } from "./sender.js";
import { Subscription } from "./subscriber.js";
const unaryTimeoutMs = 30_000;
/** Client is a connection to jetgate over gRPC (HTTP/2). */
export class Client {
    /** The generated connect clients, for calls this class does not wrap. */
    consumers;
    streams;
    #session;
    #sender;
    constructor(opts) {
        const secure = opts.tls !== undefined && opts.tls !== false;
        const baseUrl = /^https?:\/\//.test(opts.address) ? opts.address : `${secure ? "https" : "http"}://${opts.address}`;
        const tls = typeof opts.tls === "object" ? opts.tls : {};
        const nodeOptions = secure ? { ca: tls.ca, cert: tls.cert, key: tls.key, servername: tls.servername } : {};
        this.#session = new Http2SessionManager(baseUrl, { pingIntervalMs: 10_000, pingTimeoutMs: 5_000 }, nodeOptions);
        const interceptors = [];
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
    async publish(stream, subject, data, opts = {}) {
        const headers = {};
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
    async fetch(stream, consumer, opts = {}) {
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
    getConsumer(stream, consumer) {
        return this.consumers.getConsumer({ stream, consumer }, { timeoutMs: unaryTimeoutMs });
    }
    /**
     * subscribe runs handler on each message of the consumer, over a Consume
     * stream: resolved, the message is acked; rejected, nak'ed with a growing
     * delay (or termed, for a FinalError). See SubscribeOptions.
     */
    subscribe(stream, consumer, handler, opts = {}) {
        return new Subscription(this.consumers, stream, consumer, handler, opts);
    }
    /** close ends the connection; close subscriptions first. */
    close() {
        this.#session.abort();
    }
}

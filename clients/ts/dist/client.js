import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { durationFromMs, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ConsumerService } from "./gen/jetgate/v1/consumer_pb.js";
import { StreamService } from "./gen/jetgate/v1/stream_pb.js";
import { configPb, maskPaths, seekTargetPb } from "./admin.js";
import { consumerConfig, consumerInfo, consumerState, consumerSummary, deadLetterPage, emptyReasonName, leases, redriveResult, streamSummary, } from "./info.js";
import { Message } from "./message.js";
import { Sender } from "./sender.js";
import { Subscription } from "./subscriber.js";
function headersPb(h) {
    const out = {};
    for (const [k, v] of Object.entries(h ?? {})) {
        out[k] = { values: Array.isArray(v) ? v : [v] };
    }
    return out;
}
const bytes = (d) => (typeof d === "string" ? new TextEncoder().encode(d) : d);
const unaryTimeoutMs = 30_000;
/** Client is a connection to jetgate over gRPC (HTTP/2). */
export class Client {
    /** The generated connect clients, with protobuf's own types (bigint for 64-bit fields). */
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
    async publishBatch(stream, messages) {
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
    async fetch(stream, consumer, opts = {}) {
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
        });
    }
    /** getConsumer is the consumer's configuration and live state. */
    async getConsumer(stream, consumer) {
        return consumerInfo(await this.consumers.getConsumer({ stream, consumer }, { timeoutMs: unaryTimeoutMs }));
    }
    /** pause stops the server delivering the consumer's messages, for every client, until or for a while. */
    async pause(stream, consumer, opts) {
        if ((opts.until === undefined) === (opts.duration === undefined)) {
            throw new RangeError("pause takes until (a Date) or duration (ms from now), one of them");
        }
        const until = opts.until ?? new Date(Date.now() + (opts.duration ?? 0));
        const res = await this.consumers.pause({ stream, consumer, pauseUntil: timestampFromDate(until) }, { timeoutMs: unaryTimeoutMs });
        return { paused: res.paused, pauseUntil: res.pauseUntil ? timestampDate(res.pauseUntil) : undefined };
    }
    /** resume lets a paused consumer deliver again at once. */
    async resume(stream, consumer) {
        const res = await this.consumers.resume({ stream, consumer }, { timeoutMs: unaryTimeoutMs });
        return { paused: res.paused };
    }
    /** unpin releases the pinned client of a pinned_client priority group (unset: the consumer's only group). */
    async unpin(stream, consumer, opts = {}) {
        await this.consumers.unpin({ stream, consumer, group: opts.group ?? "" }, { timeoutMs: unaryTimeoutMs });
    }
    /**
     * seek moves where the consumer delivers from, for every client: to a
     * stream sequence ({ sequence }), to the first message stored at or after
     * a time ({ time }), or to its ack floor ({ ackFloor: true }: everything
     * not acknowledged comes again, now). Leases held on it are void. Needs
     * nats-server 2.14 or later (else FAILED_PRECONDITION, SEEK_UNSUPPORTED).
     */
    async seek(stream, consumer, to) {
        const target = seekTargetPb(to);
        const res = await this.consumers.seek({ stream, consumer, target }, { timeoutMs: unaryTimeoutMs });
        return { resetSequence: Number(res.resetSequence), state: consumerState(res.state) };
    }
    /**
     * createConsumer creates a durable pull consumer with explicit acks (its
     * name is config.durableName), within the gateway's admin bounds; every
     * replica serves it at once.
     */
    async createConsumer(stream, config) {
        const res = await this.consumers.createConsumer({ stream, config: configPb(config) }, { timeoutMs: unaryTimeoutMs });
        return { config: consumerConfig(res.config), state: consumerState(res.state) };
    }
    /**
     * updateConsumer sets the fields updateMask names (["ackWait"], or
     * "ackWait,maxDeliver") of a consumer created through the API to their
     * values in config.
     */
    async updateConsumer(stream, consumer, config, updateMask) {
        const req = { stream, consumer, config: configPb(config), updateMask: { paths: maskPaths(updateMask) } };
        const res = await this.consumers.updateConsumer(req, { timeoutMs: unaryTimeoutMs });
        return { config: consumerConfig(res.config), state: consumerState(res.state) };
    }
    /** deleteConsumer deletes a consumer created through the API: its leases are void, its waiting callers answered. */
    async deleteConsumer(stream, consumer) {
        await this.consumers.deleteConsumer({ stream, consumer }, { timeoutMs: unaryTimeoutMs });
    }
    /**
     * redrive puts dead letters back on their subjects: opts.seqs (their
     * sequences in the dead-letter stream), or all of the consumer's.
     */
    async redrive(stream, consumer, opts = {}) {
        const seqs = (opts.seqs ?? []).map((s) => BigInt(s));
        return redriveResult(await this.consumers.redrive({ stream, consumer, seqs }, { timeoutMs: unaryTimeoutMs }));
    }
    /** listStreams lists the streams this gateway serves consumers of that the caller may read. */
    async listStreams() {
        return (await this.streams.listStreams({}, { timeoutMs: unaryTimeoutMs })).streams.map(streamSummary);
    }
    /** listConsumers lists the stream's consumers this gateway serves, with the backlog of each. */
    async listConsumers(stream) {
        return (await this.consumers.listConsumers({ stream }, { timeoutMs: unaryTimeoutMs })).consumers.map(consumerSummary);
    }
    /** listLeases says who holds the consumer's live leases, across every replica. */
    async listLeases(stream, consumer) {
        return leases(await this.consumers.listLeases({ stream, consumer }, { timeoutMs: unaryTimeoutMs }));
    }
    /** listDeadLetters is a page of the consumer's dead letters, oldest first. */
    async listDeadLetters(stream, consumer, opts = {}) {
        const res = await this.consumers.listDeadLetters({ stream, consumer, pageSize: opts.pageSize ?? 0, pageToken: opts.pageToken ?? "" }, { timeoutMs: unaryTimeoutMs });
        return deadLetterPage(res);
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

import { type Client as RpcClient, type Interceptor } from "@connectrpc/connect";
import { ConsumerService, type GetConsumerResponse } from "./gen/jetgate/v1/consumer_pb.js";
import { StreamService } from "./gen/jetgate/v1/stream_pb.js";
import { Message } from "./message.js";
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
/** Client is a connection to jetgate over gRPC (HTTP/2). */
export declare class Client {
    #private;
    /** The generated connect clients, for calls this class does not wrap. */
    readonly consumers: RpcClient<typeof ConsumerService>;
    readonly streams: RpcClient<typeof StreamService>;
    constructor(opts: ClientOptions);
    /** publish stores one message in a stream and resolves with its sequence. */
    publish(stream: string, subject: string, data: Uint8Array | string, opts?: PublishOptions): Promise<PublishAck>;
    /** fetch leases up to opts.batch messages; none within opts.expires is an empty list. */
    fetch(stream: string, consumer: string, opts?: FetchOptions): Promise<Message[]>;
    /** getConsumer is the consumer's configuration and live state. */
    getConsumer(stream: string, consumer: string): Promise<GetConsumerResponse>;
    /**
     * subscribe runs handler on each message of the consumer, over a Consume
     * stream: resolved, the message is acked; rejected, nak'ed with a growing
     * delay (or termed, for a FinalError). See SubscribeOptions.
     */
    subscribe(stream: string, consumer: string, handler: Handler, opts?: SubscribeOptions): Subscription;
    /** close ends the connection; close subscriptions first. */
    close(): void;
}

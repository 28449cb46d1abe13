import type { GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Duration } from "@bufbuild/protobuf/wkt";
import type { HeaderValues } from "./consumer_pb.js";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file jetgate/v1/stream.proto.
 */
export declare const file_jetgate_v1_stream: GenFile;
/**
 * PublishRequest is one message to store.
 *
 * @generated from message jetgate.v1.PublishRequest
 */
export type PublishRequest = Message<"jetgate.v1.PublishRequest"> & {
    /**
     * The stream that must store the message.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The subject to publish to; it must be one of the stream's subjects and
     * must not start with $.
     *
     * @generated from field: string subject = 2;
     */
    subject: string;
    /**
     * The message payload.
     *
     * @generated from field: bytes data = 3;
     */
    data: Uint8Array;
    /**
     * The message headers; a header may carry several values.
     *
     * @generated from field: map<string, jetgate.v1.HeaderValues> headers = 4;
     */
    headers: {
        [key: string]: HeaderValues;
    };
    /**
     * A deduplication id (Nats-Msg-Id): a repeat within the stream's duplicate
     * window is stored once.
     *
     * @generated from field: string msg_id = 5;
     */
    msgId: string;
    /**
     * The message's own time to live (Nats-TTL), at least 1s, on a stream
     * with allow_msg_ttl; elsewhere the publish is refused with
     * TTL_NOT_ALLOWED and nothing is stored.
     * In JSON, protobuf's form ("0.5s") or Go's ("500ms", "1m", "1h30m").
     *
     * @generated from field: google.protobuf.Duration ttl = 6;
     */
    ttl?: Duration | undefined;
};
/**
 * Describes the message jetgate.v1.PublishRequest.
 * Use `create(PublishRequestSchema)` to create a new message.
 */
export declare const PublishRequestSchema: GenMessage<PublishRequest>;
/**
 * PublishResponse is JetStream's acknowledgement of a publish.
 *
 * @generated from message jetgate.v1.PublishResponse
 */
export type PublishResponse = Message<"jetgate.v1.PublishResponse"> & {
    /**
     * The stream that stored the message.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The message's sequence in the stream.
     *
     * @generated from field: uint64 seq = 2;
     */
    seq: bigint;
    /**
     * True when msg_id was seen before and the message was not stored again.
     *
     * @generated from field: bool duplicate = 3;
     */
    duplicate: boolean;
};
/**
 * Describes the message jetgate.v1.PublishResponse.
 * Use `create(PublishResponseSchema)` to create a new message.
 */
export declare const PublishResponseSchema: GenMessage<PublishResponse>;
/**
 * PublishBatchRequest is a list of messages to store all or none.
 *
 * @generated from message jetgate.v1.PublishBatchRequest
 */
export type PublishBatchRequest = Message<"jetgate.v1.PublishBatchRequest"> & {
    /**
     * The stream that must store the messages.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The messages, in order: 1 to 1000.
     *
     * @generated from field: repeated jetgate.v1.BatchMessage messages = 2;
     */
    messages: BatchMessage[];
};
/**
 * Describes the message jetgate.v1.PublishBatchRequest.
 * Use `create(PublishBatchRequestSchema)` to create a new message.
 */
export declare const PublishBatchRequestSchema: GenMessage<PublishBatchRequest>;
/**
 * BatchMessage is one message of an atomic batch.
 *
 * @generated from message jetgate.v1.BatchMessage
 */
export type BatchMessage = Message<"jetgate.v1.BatchMessage"> & {
    /**
     * The subject to publish to; it must be one of the stream's subjects.
     *
     * @generated from field: string subject = 1;
     */
    subject: string;
    /**
     * The message payload.
     *
     * @generated from field: bytes data = 2;
     */
    data: Uint8Array;
    /**
     * The message headers.
     *
     * @generated from field: map<string, jetgate.v1.HeaderValues> headers = 3;
     */
    headers: {
        [key: string]: HeaderValues;
    };
    /**
     * The message's own time to live, as for Publish.
     * In JSON, protobuf's form ("0.5s") or Go's ("500ms", "1m", "1h30m").
     *
     * @generated from field: google.protobuf.Duration ttl = 4;
     */
    ttl?: Duration | undefined;
};
/**
 * Describes the message jetgate.v1.BatchMessage.
 * Use `create(BatchMessageSchema)` to create a new message.
 */
export declare const BatchMessageSchema: GenMessage<BatchMessage>;
/**
 * PublishBatchResponse is JetStream's acknowledgement of an atomic batch.
 *
 * @generated from message jetgate.v1.PublishBatchResponse
 */
export type PublishBatchResponse = Message<"jetgate.v1.PublishBatchResponse"> & {
    /**
     * The stream that stored the messages.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * Each message's sequence in the stream, in the order given.
     *
     * @generated from field: repeated uint64 seqs = 2;
     */
    seqs: bigint[];
};
/**
 * Describes the message jetgate.v1.PublishBatchResponse.
 * Use `create(PublishBatchResponseSchema)` to create a new message.
 */
export declare const PublishBatchResponseSchema: GenMessage<PublishBatchResponse>;
/**
 * ListStreamsRequest asks for the streams the gateway serves.
 *
 * @generated from message jetgate.v1.ListStreamsRequest
 */
export type ListStreamsRequest = Message<"jetgate.v1.ListStreamsRequest"> & {};
/**
 * Describes the message jetgate.v1.ListStreamsRequest.
 * Use `create(ListStreamsRequestSchema)` to create a new message.
 */
export declare const ListStreamsRequestSchema: GenMessage<ListStreamsRequest>;
/**
 * ListStreamsResponse lists the streams the gateway serves consumers of.
 *
 * @generated from message jetgate.v1.ListStreamsResponse
 */
export type ListStreamsResponse = Message<"jetgate.v1.ListStreamsResponse"> & {
    /**
     * The streams, by name.
     *
     * @generated from field: repeated jetgate.v1.StreamSummary streams = 1;
     */
    streams: StreamSummary[];
};
/**
 * Describes the message jetgate.v1.ListStreamsResponse.
 * Use `create(ListStreamsResponseSchema)` to create a new message.
 */
export declare const ListStreamsResponseSchema: GenMessage<ListStreamsResponse>;
/**
 * StreamSummary is one stream and its size, as the NATS server reports it.
 *
 * @generated from message jetgate.v1.StreamSummary
 */
export type StreamSummary = Message<"jetgate.v1.StreamSummary"> & {
    /**
     * The stream's name.
     *
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * The subjects the stream binds.
     *
     * @generated from field: repeated string subjects = 2;
     */
    subjects: string[];
    /**
     * How many messages it holds.
     *
     * @generated from field: uint64 messages = 3;
     */
    messages: bigint;
    /**
     * How many bytes they take.
     *
     * @generated from field: uint64 bytes = 4;
     */
    bytes: bigint;
    /**
     * The sequence of its first message.
     *
     * @generated from field: uint64 first_seq = 5;
     */
    firstSeq: bigint;
    /**
     * The sequence of its last message.
     *
     * @generated from field: uint64 last_seq = 6;
     */
    lastSeq: bigint;
    /**
     * How many of its consumers this gateway serves that the caller may
     * read.
     *
     * @generated from field: int32 consumers = 7;
     */
    consumers: number;
};
/**
 * Describes the message jetgate.v1.StreamSummary.
 * Use `create(StreamSummarySchema)` to create a new message.
 */
export declare const StreamSummarySchema: GenMessage<StreamSummary>;
/**
 * StreamService publishes into the streams the gateway serves.
 *
 * @generated from service jetgate.v1.StreamService
 */
export declare const StreamService: GenService<{
    /**
     * Publish stores a message in a stream and returns JetStream's
     * acknowledgement. Only subjects bound to the stream are accepted.
     *
     * @generated from rpc jetgate.v1.StreamService.Publish
     */
    publish: {
        methodKind: "unary";
        input: typeof PublishRequestSchema;
        output: typeof PublishResponseSchema;
    };
    /**
     * PublishBatch stores a list of messages all or none (an atomic batch,
     * on a stream with allow_atomic) and returns each message's sequence. A
     * refused batch stores nothing, and the error says which message and why.
     *
     * @generated from rpc jetgate.v1.StreamService.PublishBatch
     */
    publishBatch: {
        methodKind: "unary";
        input: typeof PublishBatchRequestSchema;
        output: typeof PublishBatchResponseSchema;
    };
    /**
     * ListStreams lists the streams this gateway serves consumers of that the
     * caller may read, with their size: one request to the NATS server per
     * stream.
     *
     * @generated from rpc jetgate.v1.StreamService.ListStreams
     */
    listStreams: {
        methodKind: "unary";
        input: typeof ListStreamsRequestSchema;
        output: typeof ListStreamsResponseSchema;
    };
}>;

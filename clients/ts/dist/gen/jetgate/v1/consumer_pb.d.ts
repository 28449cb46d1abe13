import type { GenEnum, GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Duration, FieldMask, Timestamp } from "@bufbuild/protobuf/wkt";
import type { Message as Message$1 } from "@bufbuild/protobuf";
/**
 * Describes the file jetgate/v1/consumer.proto.
 */
export declare const file_jetgate_v1_consumer: GenFile;
/**
 * FetchRequest asks for a batch of leased messages.
 *
 * @generated from message jetgate.v1.FetchRequest
 */
export type FetchRequest = Message$1<"jetgate.v1.FetchRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * How many messages to lease at most. Unset or 0 means 1; above the
     * gateway's maximum (default 1000) is rejected.
     *
     * @generated from field: int32 batch = 3;
     */
    batch: number;
    /**
     * How long to wait for a first message. Unset means 5s; 0s returns at once
     * with what is available. Capped by the gateway's maximum and by the
     * caller's own deadline.
     * In JSON, protobuf's form ("0.5s") or Go's ("500ms", "1m", "1h30m").
     *
     * @generated from field: google.protobuf.Duration expires = 4;
     */
    expires?: Duration | undefined;
    /**
     * The most bytes to return in this batch, if set, each message counted as
     * NATS counts it against a pull: its subject, ack subject, headers and
     * data.
     *
     * @generated from field: optional int64 max_bytes = 5;
     */
    maxBytes?: bigint | undefined;
    /**
     * The consumer's priority group to pull from. Unset: the consumer's group
     * when it has exactly one (a consumer with several needs it).
     *
     * @generated from field: string group = 6;
     */
    group: string;
    /**
     * Overflow policy: take messages only while the consumer has at least
     * this many pending.
     *
     * @generated from field: int64 min_pending = 7;
     */
    minPending: bigint;
    /**
     * Overflow policy: take messages only while the consumer has at least
     * this many delivered and unacknowledged.
     *
     * @generated from field: int64 min_ack_pending = 8;
     */
    minAckPending: bigint;
    /**
     * Prioritized policy: 0 is served first, 9 last.
     *
     * @generated from field: int32 priority = 9;
     */
    priority: number;
    /**
     * Pinned-client policy: the pin this caller was given (pin_id of an
     * earlier response), through any replica. Unset asks to be pinned.
     *
     * @generated from field: string pin_id = 10;
     */
    pinId: string;
};
/**
 * Describes the message jetgate.v1.FetchRequest.
 * Use `create(FetchRequestSchema)` to create a new message.
 */
export declare const FetchRequestSchema: GenMessage<FetchRequest>;
/**
 * FetchResponse carries the leased messages.
 *
 * @generated from message jetgate.v1.FetchResponse
 */
export type FetchResponse = Message$1<"jetgate.v1.FetchResponse"> & {
    /**
     * The leased messages, in delivery order. Empty is a success.
     *
     * @generated from field: repeated jetgate.v1.Message messages = 1;
     */
    messages: Message[];
    /**
     * Why no messages were returned; unspecified when messages is not empty.
     *
     * @generated from field: jetgate.v1.EmptyReason empty_reason = 2;
     */
    emptyReason: EmptyReason;
    /**
     * Pinned-client policy: the pin the server gave this caller; send it
     * with the next Fetch.
     *
     * @generated from field: string pin_id = 3;
     */
    pinId: string;
};
/**
 * Describes the message jetgate.v1.FetchResponse.
 * Use `create(FetchResponseSchema)` to create a new message.
 */
export declare const FetchResponseSchema: GenMessage<FetchResponse>;
/**
 * Message is one leased delivery.
 *
 * @generated from message jetgate.v1.Message
 */
export type Message = Message$1<"jetgate.v1.Message"> & {
    /**
     * The opaque token that settles this lease.
     *
     * @generated from field: string token = 1;
     */
    token: string;
    /**
     * The subject the message was published to.
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
     * When the lease ends. After it, settling fails with LEASE_EXPIRED and
     * JetStream redelivers the message.
     *
     * @generated from field: google.protobuf.Timestamp lease_deadline = 5;
     */
    leaseDeadline?: Timestamp | undefined;
    /**
     * Delivery metadata, as the delivery's ack subject carries it.
     *
     * @generated from field: jetgate.v1.MessageMetadata metadata = 6;
     */
    metadata?: MessageMetadata | undefined;
    /**
     * The subject and headers byte for byte, set only when the subject or a
     * header's name or value is not valid UTF-8, which any NATS client may
     * publish; `subject` and `headers` then hold them with each invalid byte
     * replaced by U+FFFD.
     *
     * @generated from field: optional jetgate.v1.RawMessage raw = 7;
     */
    raw?: RawMessage | undefined;
};
/**
 * Describes the message jetgate.v1.Message.
 * Use `create(MessageSchema)` to create a new message.
 */
export declare const MessageSchema: GenMessage<Message>;
/**
 * RawMessage is the exact bytes of a message's subject and headers, for a
 * message whose subject or headers are not valid UTF-8.
 *
 * @generated from message jetgate.v1.RawMessage
 */
export type RawMessage = Message$1<"jetgate.v1.RawMessage"> & {
    /**
     * The subject's exact bytes.
     *
     * @generated from field: bytes subject = 1;
     */
    subject: Uint8Array;
    /**
     * Every header of the message, in name order.
     *
     * @generated from field: repeated jetgate.v1.RawHeader headers = 2;
     */
    headers: RawHeader[];
};
/**
 * Describes the message jetgate.v1.RawMessage.
 * Use `create(RawMessageSchema)` to create a new message.
 */
export declare const RawMessageSchema: GenMessage<RawMessage>;
/**
 * RawHeader is one header's name and values, byte for byte.
 *
 * @generated from message jetgate.v1.RawHeader
 */
export type RawHeader = Message$1<"jetgate.v1.RawHeader"> & {
    /**
     * The header's name.
     *
     * @generated from field: bytes name = 1;
     */
    name: Uint8Array;
    /**
     * The header's values, in order.
     *
     * @generated from field: repeated bytes values = 2;
     */
    values: Uint8Array[];
};
/**
 * Describes the message jetgate.v1.RawHeader.
 * Use `create(RawHeaderSchema)` to create a new message.
 */
export declare const RawHeaderSchema: GenMessage<RawHeader>;
/**
 * HeaderValues holds every value of one header, in order.
 *
 * @generated from message jetgate.v1.HeaderValues
 */
export type HeaderValues = Message$1<"jetgate.v1.HeaderValues"> & {
    /**
     * The header's values.
     *
     * @generated from field: repeated string values = 1;
     */
    values: string[];
};
/**
 * Describes the message jetgate.v1.HeaderValues.
 * Use `create(HeaderValuesSchema)` to create a new message.
 */
export declare const HeaderValuesSchema: GenMessage<HeaderValues>;
/**
 * MessageMetadata is what JetStream says about one delivery.
 *
 * @generated from message jetgate.v1.MessageMetadata
 */
export type MessageMetadata = Message$1<"jetgate.v1.MessageMetadata"> & {
    /**
     * The stream the message is stored in.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The consumer that delivered it.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * The message's sequence in the stream.
     *
     * @generated from field: uint64 stream_seq = 3;
     */
    streamSeq: bigint;
    /**
     * The delivery's sequence in the consumer.
     *
     * @generated from field: uint64 consumer_seq = 4;
     */
    consumerSeq: bigint;
    /**
     * How many times the message has been delivered, this time included.
     *
     * @generated from field: uint64 num_delivered = 5;
     */
    numDelivered: bigint;
    /**
     * How many messages were waiting for the consumer after this one.
     *
     * @generated from field: uint64 num_pending = 6;
     */
    numPending: bigint;
    /**
     * When the message was stored in the stream.
     *
     * @generated from field: google.protobuf.Timestamp timestamp = 7;
     */
    timestamp?: Timestamp | undefined;
};
/**
 * Describes the message jetgate.v1.MessageMetadata.
 * Use `create(MessageMetadataSchema)` to create a new message.
 */
export declare const MessageMetadataSchema: GenMessage<MessageMetadata>;
/**
 * AckRequest acknowledges messages.
 *
 * @generated from message jetgate.v1.AckRequest
 */
export type AckRequest = Message$1<"jetgate.v1.AckRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * The leases to settle: 1 to 1000 tokens.
     *
     * @generated from field: repeated string tokens = 3;
     */
    tokens: string[];
};
/**
 * Describes the message jetgate.v1.AckRequest.
 * Use `create(AckRequestSchema)` to create a new message.
 */
export declare const AckRequestSchema: GenMessage<AckRequest>;
/**
 * AckResponse lists the tokens that could not be acked.
 *
 * @generated from message jetgate.v1.AckResponse
 */
export type AckResponse = Message$1<"jetgate.v1.AckResponse"> & {
    /**
     * One entry per token that failed; every other token succeeded.
     *
     * @generated from field: repeated jetgate.v1.TokenFailure failures = 1;
     */
    failures: TokenFailure[];
};
/**
 * Describes the message jetgate.v1.AckResponse.
 * Use `create(AckResponseSchema)` to create a new message.
 */
export declare const AckResponseSchema: GenMessage<AckResponse>;
/**
 * NakRequest asks for messages to be redelivered.
 *
 * @generated from message jetgate.v1.NakRequest
 */
export type NakRequest = Message$1<"jetgate.v1.NakRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * The leases to settle: 1 to 1000 tokens.
     *
     * @generated from field: repeated string tokens = 3;
     */
    tokens: string[];
    /**
     * How long JetStream waits before redelivering; unset redelivers at once.
     * In JSON, protobuf's form ("0.5s") or Go's ("500ms", "1m", "1h30m").
     *
     * @generated from field: google.protobuf.Duration delay = 4;
     */
    delay?: Duration | undefined;
};
/**
 * Describes the message jetgate.v1.NakRequest.
 * Use `create(NakRequestSchema)` to create a new message.
 */
export declare const NakRequestSchema: GenMessage<NakRequest>;
/**
 * NakResponse lists the tokens that could not be nak'ed.
 *
 * @generated from message jetgate.v1.NakResponse
 */
export type NakResponse = Message$1<"jetgate.v1.NakResponse"> & {
    /**
     * One entry per token that failed; every other token succeeded.
     *
     * @generated from field: repeated jetgate.v1.TokenFailure failures = 1;
     */
    failures: TokenFailure[];
};
/**
 * Describes the message jetgate.v1.NakResponse.
 * Use `create(NakResponseSchema)` to create a new message.
 */
export declare const NakResponseSchema: GenMessage<NakResponse>;
/**
 * TermRequest ends messages for good.
 *
 * @generated from message jetgate.v1.TermRequest
 */
export type TermRequest = Message$1<"jetgate.v1.TermRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * The leases to settle: 1 to 1000 tokens.
     *
     * @generated from field: repeated string tokens = 3;
     */
    tokens: string[];
    /**
     * Why the messages are terminated; JetStream puts it in its advisory.
     *
     * @generated from field: string reason = 4;
     */
    reason: string;
};
/**
 * Describes the message jetgate.v1.TermRequest.
 * Use `create(TermRequestSchema)` to create a new message.
 */
export declare const TermRequestSchema: GenMessage<TermRequest>;
/**
 * TermResponse lists the tokens that could not be terminated.
 *
 * @generated from message jetgate.v1.TermResponse
 */
export type TermResponse = Message$1<"jetgate.v1.TermResponse"> & {
    /**
     * One entry per token that failed; every other token succeeded.
     *
     * @generated from field: repeated jetgate.v1.TokenFailure failures = 1;
     */
    failures: TokenFailure[];
};
/**
 * Describes the message jetgate.v1.TermResponse.
 * Use `create(TermResponseSchema)` to create a new message.
 */
export declare const TermResponseSchema: GenMessage<TermResponse>;
/**
 * ExtendRequest restarts lease clocks.
 *
 * @generated from message jetgate.v1.ExtendRequest
 */
export type ExtendRequest = Message$1<"jetgate.v1.ExtendRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * The leases to extend: 1 to 1000 tokens.
     *
     * @generated from field: repeated string tokens = 3;
     */
    tokens: string[];
    /**
     * How long each lease is to last from now, as Pub/Sub's ModifyAckDeadline
     * and SQS's ChangeMessageVisibility take it. Unset: one ack_wait (a +WPI
     * restarts the server's clock), as before. 0s: the message is given back
     * now (a Nak), and redelivered at once. Up to limits.max_lease (default
     * 1h): the replica that issued the lease keeps it alive, sending +WPI
     * before each of the server's deadlines until then, and the new token and
     * lease_deadline carry the deadline asked for. The keep-alive ends with
     * that replica: if it stops or restarts, the server redelivers the message
     * one ack_wait after the last +WPI. Longer than limits.max_lease, or
     * negative: INVALID_ARGUMENT.
     *
     * @generated from field: google.protobuf.Duration duration = 4;
     */
    duration?: Duration | undefined;
};
/**
 * Describes the message jetgate.v1.ExtendRequest.
 * Use `create(ExtendRequestSchema)` to create a new message.
 */
export declare const ExtendRequestSchema: GenMessage<ExtendRequest>;
/**
 * ExtendResponse carries the extended leases and the failures.
 *
 * @generated from message jetgate.v1.ExtendResponse
 */
export type ExtendResponse = Message$1<"jetgate.v1.ExtendResponse"> & {
    /**
     * One entry per token that was extended.
     *
     * @generated from field: repeated jetgate.v1.ExtendedLease leases = 1;
     */
    leases: ExtendedLease[];
    /**
     * One entry per token that failed.
     *
     * @generated from field: repeated jetgate.v1.TokenFailure failures = 2;
     */
    failures: TokenFailure[];
};
/**
 * Describes the message jetgate.v1.ExtendResponse.
 * Use `create(ExtendResponseSchema)` to create a new message.
 */
export declare const ExtendResponseSchema: GenMessage<ExtendResponse>;
/**
 * ExtendedLease is a lease whose clock was restarted.
 *
 * @generated from message jetgate.v1.ExtendedLease
 */
export type ExtendedLease = Message$1<"jetgate.v1.ExtendedLease"> & {
    /**
     * The token as it was sent.
     *
     * @generated from field: string token = 1;
     */
    token: string;
    /**
     * A new token carrying the new deadline. The old token stays good. Empty
     * when the lease was given back (duration 0s).
     *
     * @generated from field: string new_token = 2;
     */
    newToken: string;
    /**
     * The lease's new deadline; for a lease given back, when it went back.
     *
     * @generated from field: google.protobuf.Timestamp lease_deadline = 3;
     */
    leaseDeadline?: Timestamp | undefined;
};
/**
 * Describes the message jetgate.v1.ExtendedLease.
 * Use `create(ExtendedLeaseSchema)` to create a new message.
 */
export declare const ExtendedLeaseSchema: GenMessage<ExtendedLease>;
/**
 * TokenFailure says why one token could not be settled.
 *
 * @generated from message jetgate.v1.TokenFailure
 */
export type TokenFailure = Message$1<"jetgate.v1.TokenFailure"> & {
    /**
     * The token as it was sent.
     *
     * @generated from field: string token = 1;
     */
    token: string;
    /**
     * Its position in the request's tokens, from 0.
     *
     * @generated from field: int32 index = 2;
     */
    index: number;
    /**
     * The gRPC status code (google.rpc.Code) of the failure.
     *
     * @generated from field: int32 code = 3;
     */
    code: number;
    /**
     * A machine-readable reason in UPPER_SNAKE_CASE, such as LEASE_EXPIRED.
     *
     * @generated from field: string reason = 4;
     */
    reason: string;
    /**
     * A sentence a person can act on.
     *
     * @generated from field: string message = 5;
     */
    message: string;
};
/**
 * Describes the message jetgate.v1.TokenFailure.
 * Use `create(TokenFailureSchema)` to create a new message.
 */
export declare const TokenFailureSchema: GenMessage<TokenFailure>;
/**
 * GetConsumerRequest names a consumer.
 *
 * @generated from message jetgate.v1.GetConsumerRequest
 */
export type GetConsumerRequest = Message$1<"jetgate.v1.GetConsumerRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
};
/**
 * Describes the message jetgate.v1.GetConsumerRequest.
 * Use `create(GetConsumerRequestSchema)` to create a new message.
 */
export declare const GetConsumerRequestSchema: GenMessage<GetConsumerRequest>;
/**
 * GetConsumerResponse is a consumer's configuration and state.
 *
 * @generated from message jetgate.v1.GetConsumerResponse
 */
export type GetConsumerResponse = Message$1<"jetgate.v1.GetConsumerResponse"> & {
    /**
     * The consumer's configuration.
     *
     * @generated from field: jetgate.v1.ConsumerConfig config = 1;
     */
    config?: ConsumerConfig | undefined;
    /**
     * The consumer's live state, as the server reports it.
     *
     * @generated from field: jetgate.v1.ConsumerState state = 2;
     */
    state?: ConsumerState | undefined;
    /**
     * How many live leases this gateway holds on the consumer.
     *
     * @generated from field: int64 gateway_leases = 3;
     */
    gatewayLeases: bigint;
    /**
     * How many dead letters of the consumer wait in its dead-letter stream
     * (0 when it has none configured).
     *
     * @generated from field: int64 dead_letters = 4;
     */
    deadLetters: bigint;
    /**
     * How long the oldest message the consumer has not acknowledged has been
     * in the stream (0s when every message is acknowledged).
     *
     * @generated from field: google.protobuf.Duration oldest_unacked_age = 5;
     */
    oldestUnackedAge?: Duration | undefined;
    /**
     * How this gateway pushes the consumer's messages; unset when the
     * consumer is not pushed.
     *
     * @generated from field: jetgate.v1.PushState push = 6;
     */
    push?: PushState | undefined;
};
/**
 * Describes the message jetgate.v1.GetConsumerResponse.
 * Use `create(GetConsumerResponseSchema)` to create a new message.
 */
export declare const GetConsumerResponseSchema: GenMessage<GetConsumerResponse>;
/**
 * PushState is how one gateway pushes a consumer's messages to its endpoint.
 *
 * @generated from message jetgate.v1.PushState
 */
export type PushState = Message$1<"jetgate.v1.PushState"> & {
    /**
     * The endpoint, without its query (which may carry a secret).
     *
     * @generated from field: string url = 1;
     */
    url: string;
    /**
     * How many push requests run now.
     *
     * @generated from field: int32 in_flight = 2;
     */
    inFlight: number;
    /**
     * Whether the endpoint takes pushes; false while the gateway holds back
     * (one request at a time) after failures every message met alike.
     *
     * @generated from field: bool endpoint_up = 3;
     */
    endpointUp: boolean;
    /**
     * The last failure: a status or why no answer came, never a response
     * body. Empty when none happened.
     *
     * @generated from field: string last_error = 4;
     */
    lastError: string;
    /**
     * When the last failure happened.
     *
     * @generated from field: google.protobuf.Timestamp last_error_time = 5;
     */
    lastErrorTime?: Timestamp | undefined;
};
/**
 * Describes the message jetgate.v1.PushState.
 * Use `create(PushStateSchema)` to create a new message.
 */
export declare const PushStateSchema: GenMessage<PushState>;
/**
 * ConsumeRequest opens a stream of leases.
 *
 * @generated from message jetgate.v1.ConsumeRequest
 */
export type ConsumeRequest = Message$1<"jetgate.v1.ConsumeRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * The most unsettled leases the stream holds at once; unset or 0 is 200.
     *
     * @generated from field: int32 max_messages = 3;
     */
    maxMessages: number;
    /**
     * The most bytes of unsettled messages the stream holds at once, each
     * counted as NATS counts it against a pull: its subject, ack subject,
     * headers and data.
     *
     * @generated from field: optional int64 max_bytes = 4;
     */
    maxBytes?: bigint | undefined;
    /**
     * How often an idle stream sends an empty response; unset is 15s.
     * In JSON, protobuf's form ("0.5s") or Go's ("500ms", "1m", "1h30m").
     *
     * @generated from field: google.protobuf.Duration heartbeat = 5;
     */
    heartbeat?: Duration | undefined;
    /**
     * Keep the stream's leases alive (+WPI before each deadline) while it is
     * open, up to the gateway's maximum lease time.
     *
     * @generated from field: bool auto_extend = 6;
     */
    autoExtend: boolean;
    /**
     * The consumer's priority group, as for Fetch.
     *
     * @generated from field: string group = 7;
     */
    group: string;
    /**
     * Overflow policy, as for Fetch.
     *
     * @generated from field: int64 min_pending = 8;
     */
    minPending: bigint;
    /**
     * Overflow policy, as for Fetch.
     *
     * @generated from field: int64 min_ack_pending = 9;
     */
    minAckPending: bigint;
    /**
     * Prioritized policy, as for Fetch.
     *
     * @generated from field: int32 priority = 10;
     */
    priority: number;
    /**
     * Pinned-client policy: a pin given earlier. The stream keeps the pin the
     * server gives it, and ends with PIN_ID_MISMATCH when it loses it.
     *
     * @generated from field: string pin_id = 11;
     */
    pinId: string;
};
/**
 * Describes the message jetgate.v1.ConsumeRequest.
 * Use `create(ConsumeRequestSchema)` to create a new message.
 */
export declare const ConsumeRequestSchema: GenMessage<ConsumeRequest>;
/**
 * ConsumeResponse carries messages, or none as a heartbeat.
 *
 * @generated from message jetgate.v1.ConsumeResponse
 */
export type ConsumeResponse = Message$1<"jetgate.v1.ConsumeResponse"> & {
    /**
     * The messages leased, each with its token.
     *
     * @generated from field: repeated jetgate.v1.Message messages = 1;
     */
    messages: Message[];
    /**
     * Pinned-client policy: the stream's pin.
     *
     * @generated from field: string pin_id = 2;
     */
    pinId: string;
};
/**
 * Describes the message jetgate.v1.ConsumeResponse.
 * Use `create(ConsumeResponseSchema)` to create a new message.
 */
export declare const ConsumeResponseSchema: GenMessage<ConsumeResponse>;
/**
 * PauseRequest pauses a consumer.
 *
 * @generated from message jetgate.v1.PauseRequest
 */
export type PauseRequest = Message$1<"jetgate.v1.PauseRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * When the consumer delivers again by itself; required, in the future.
     *
     * @generated from field: google.protobuf.Timestamp pause_until = 3;
     */
    pauseUntil?: Timestamp | undefined;
};
/**
 * Describes the message jetgate.v1.PauseRequest.
 * Use `create(PauseRequestSchema)` to create a new message.
 */
export declare const PauseRequestSchema: GenMessage<PauseRequest>;
/**
 * PauseResponse is the consumer's pause as the server took it.
 *
 * @generated from message jetgate.v1.PauseResponse
 */
export type PauseResponse = Message$1<"jetgate.v1.PauseResponse"> & {
    /**
     * Whether the consumer is paused.
     *
     * @generated from field: bool paused = 1;
     */
    paused: boolean;
    /**
     * Until when.
     *
     * @generated from field: google.protobuf.Timestamp pause_until = 2;
     */
    pauseUntil?: Timestamp | undefined;
};
/**
 * Describes the message jetgate.v1.PauseResponse.
 * Use `create(PauseResponseSchema)` to create a new message.
 */
export declare const PauseResponseSchema: GenMessage<PauseResponse>;
/**
 * ResumeRequest resumes a paused consumer.
 *
 * @generated from message jetgate.v1.ResumeRequest
 */
export type ResumeRequest = Message$1<"jetgate.v1.ResumeRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
};
/**
 * Describes the message jetgate.v1.ResumeRequest.
 * Use `create(ResumeRequestSchema)` to create a new message.
 */
export declare const ResumeRequestSchema: GenMessage<ResumeRequest>;
/**
 * ResumeResponse is the consumer's state after Resume.
 *
 * @generated from message jetgate.v1.ResumeResponse
 */
export type ResumeResponse = Message$1<"jetgate.v1.ResumeResponse"> & {
    /**
     * Whether the consumer is still paused (false once resumed).
     *
     * @generated from field: bool paused = 1;
     */
    paused: boolean;
};
/**
 * Describes the message jetgate.v1.ResumeResponse.
 * Use `create(ResumeResponseSchema)` to create a new message.
 */
export declare const ResumeResponseSchema: GenMessage<ResumeResponse>;
/**
 * UnpinRequest unpins a priority group's client.
 *
 * @generated from message jetgate.v1.UnpinRequest
 */
export type UnpinRequest = Message$1<"jetgate.v1.UnpinRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * The priority group. Unset: the consumer's group when it has exactly
     * one.
     *
     * @generated from field: string group = 3;
     */
    group: string;
};
/**
 * Describes the message jetgate.v1.UnpinRequest.
 * Use `create(UnpinRequestSchema)` to create a new message.
 */
export declare const UnpinRequestSchema: GenMessage<UnpinRequest>;
/**
 * UnpinResponse says the group was unpinned.
 *
 * @generated from message jetgate.v1.UnpinResponse
 */
export type UnpinResponse = Message$1<"jetgate.v1.UnpinResponse"> & {};
/**
 * Describes the message jetgate.v1.UnpinResponse.
 * Use `create(UnpinResponseSchema)` to create a new message.
 */
export declare const UnpinResponseSchema: GenMessage<UnpinResponse>;
/**
 * RedriveRequest names dead letters to put back on their subjects.
 *
 * @generated from message jetgate.v1.RedriveRequest
 */
export type RedriveRequest = Message$1<"jetgate.v1.RedriveRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * Sequences of dead letters in the dead-letter stream; empty redrives all
     * of the consumer's dead letters.
     *
     * @generated from field: repeated uint64 seqs = 3;
     */
    seqs: bigint[];
};
/**
 * Describes the message jetgate.v1.RedriveRequest.
 * Use `create(RedriveRequestSchema)` to create a new message.
 */
export declare const RedriveRequestSchema: GenMessage<RedriveRequest>;
/**
 * RedriveResponse counts what was redriven and lists what was not.
 *
 * @generated from message jetgate.v1.RedriveResponse
 */
export type RedriveResponse = Message$1<"jetgate.v1.RedriveResponse"> & {
    /**
     * How many dead letters were republished and removed.
     *
     * @generated from field: int64 redriven = 1;
     */
    redriven: bigint;
    /**
     * One entry per dead letter that could not be redriven.
     *
     * @generated from field: repeated jetgate.v1.RedriveFailure failures = 2;
     */
    failures: RedriveFailure[];
};
/**
 * Describes the message jetgate.v1.RedriveResponse.
 * Use `create(RedriveResponseSchema)` to create a new message.
 */
export declare const RedriveResponseSchema: GenMessage<RedriveResponse>;
/**
 * RedriveFailure says why one dead letter was not redriven.
 *
 * @generated from message jetgate.v1.RedriveFailure
 */
export type RedriveFailure = Message$1<"jetgate.v1.RedriveFailure"> & {
    /**
     * The dead letter's sequence in the dead-letter stream.
     *
     * @generated from field: uint64 seq = 1;
     */
    seq: bigint;
    /**
     * The gRPC status code (google.rpc.Code) of the failure.
     *
     * @generated from field: int32 code = 2;
     */
    code: number;
    /**
     * A machine-readable reason in UPPER_SNAKE_CASE, such as
     * DEAD_LETTER_NOT_FOUND.
     *
     * @generated from field: string reason = 3;
     */
    reason: string;
    /**
     * A sentence a person can act on.
     *
     * @generated from field: string message = 4;
     */
    message: string;
};
/**
 * Describes the message jetgate.v1.RedriveFailure.
 * Use `create(RedriveFailureSchema)` to create a new message.
 */
export declare const RedriveFailureSchema: GenMessage<RedriveFailure>;
/**
 * ConsumerConfig is a consumer's configuration.
 *
 * @generated from message jetgate.v1.ConsumerConfig
 */
export type ConsumerConfig = Message$1<"jetgate.v1.ConsumerConfig"> & {
    /**
     * The durable name.
     *
     * @generated from field: string durable_name = 1;
     */
    durableName: string;
    /**
     * Where the consumer starts.
     *
     * @generated from field: jetgate.v1.DeliverPolicy deliver_policy = 2;
     */
    deliverPolicy: DeliverPolicy;
    /**
     * The start sequence, for DELIVER_POLICY_BY_START_SEQUENCE.
     *
     * @generated from field: uint64 opt_start_seq = 3;
     */
    optStartSeq: bigint;
    /**
     * The start time, for DELIVER_POLICY_BY_START_TIME.
     *
     * @generated from field: google.protobuf.Timestamp opt_start_time = 4;
     */
    optStartTime?: Timestamp | undefined;
    /**
     * The acknowledgement policy.
     *
     * @generated from field: jetgate.v1.AckPolicy ack_policy = 5;
     */
    ackPolicy: AckPolicy;
    /**
     * How long a delivery waits for its acknowledgement before redelivery.
     *
     * @generated from field: google.protobuf.Duration ack_wait = 6;
     */
    ackWait?: Duration | undefined;
    /**
     * How many times a message is delivered at most; -1 is unlimited.
     *
     * @generated from field: int64 max_deliver = 7;
     */
    maxDeliver: bigint;
    /**
     * Redelivery delays by delivery count, if set; they replace ack_wait.
     *
     * @generated from field: repeated google.protobuf.Duration backoff = 8;
     */
    backoff: Duration[];
    /**
     * The subjects the consumer is filtered to; empty is the whole stream.
     *
     * @generated from field: repeated string filter_subjects = 9;
     */
    filterSubjects: string[];
    /**
     * How many pull requests may wait at once.
     *
     * @generated from field: int64 max_waiting = 10;
     */
    maxWaiting: bigint;
    /**
     * How many messages may be outstanding unacknowledged at once.
     *
     * @generated from field: int64 max_ack_pending = 11;
     */
    maxAckPending: bigint;
    /**
     * The largest batch one pull may ask for; 0 is unlimited.
     *
     * @generated from field: int64 max_request_batch = 12;
     */
    maxRequestBatch: bigint;
    /**
     * The longest expiry one pull may ask for; 0 is unlimited.
     *
     * @generated from field: google.protobuf.Duration max_request_expires = 13;
     */
    maxRequestExpires?: Duration | undefined;
    /**
     * How many replicas the consumer has; 0 is the stream's.
     *
     * @generated from field: int32 num_replicas = 14;
     */
    numReplicas: number;
    /**
     * The consumer's description.
     *
     * @generated from field: string description = 15;
     */
    description: string;
    /**
     * The consumer's priority groups (ADR-42), if any.
     *
     * @generated from field: repeated string priority_groups = 16;
     */
    priorityGroups: string[];
    /**
     * How the groups are served.
     *
     * @generated from field: jetgate.v1.PriorityPolicy priority_policy = 17;
     */
    priorityPolicy: PriorityPolicy;
    /**
     * Pinned-client policy: how long a pinned client may go without pulling
     * before the pin moves on.
     *
     * @generated from field: google.protobuf.Duration priority_timeout = 18;
     */
    priorityTimeout?: Duration | undefined;
    /**
     * When a paused consumer delivers again, as configured.
     *
     * @generated from field: google.protobuf.Timestamp pause_until = 19;
     */
    pauseUntil?: Timestamp | undefined;
    /**
     * The consumer's metadata. A consumer created through the API carries
     * jetgate.created_by, the principal that created it.
     *
     * @generated from field: map<string, string> metadata = 20;
     */
    metadata: {
        [key: string]: string;
    };
    /**
     * How long the server keeps the consumer without a pull before deleting
     * it; 0s is never.
     *
     * @generated from field: google.protobuf.Duration inactive_threshold = 21;
     */
    inactiveThreshold?: Duration | undefined;
    /**
     * The largest max_bytes one pull may ask for; 0 is unlimited. With
     * max_request_batch, a pull ends at whichever it reaches first. A message
     * larger than it is not delivered: Fetch and Consume refuse it
     * MESSAGE_TOO_LARGE, naming this limit.
     *
     * @generated from field: int64 max_request_max_bytes = 22;
     */
    maxRequestMaxBytes: bigint;
};
/**
 * Describes the message jetgate.v1.ConsumerConfig.
 * Use `create(ConsumerConfigSchema)` to create a new message.
 */
export declare const ConsumerConfigSchema: GenMessage<ConsumerConfig>;
/**
 * ConsumerState is a consumer's live state.
 *
 * @generated from message jetgate.v1.ConsumerState
 */
export type ConsumerState = Message$1<"jetgate.v1.ConsumerState"> & {
    /**
     * Messages not yet delivered.
     *
     * @generated from field: uint64 num_pending = 1;
     */
    numPending: bigint;
    /**
     * Messages delivered and not yet acknowledged.
     *
     * @generated from field: int64 num_ack_pending = 2;
     */
    numAckPending: bigint;
    /**
     * Messages delivered more than once and not yet acknowledged.
     *
     * @generated from field: int64 num_redelivered = 3;
     */
    numRedelivered: bigint;
    /**
     * Pull requests waiting on the server.
     *
     * @generated from field: int64 num_waiting = 4;
     */
    numWaiting: bigint;
    /**
     * The last delivered position.
     *
     * @generated from field: jetgate.v1.SequencePair delivered = 5;
     */
    delivered?: SequencePair | undefined;
    /**
     * The acknowledgement floor.
     *
     * @generated from field: jetgate.v1.SequencePair ack_floor = 6;
     */
    ackFloor?: SequencePair | undefined;
    /**
     * When the consumer was created.
     *
     * @generated from field: google.protobuf.Timestamp created = 7;
     */
    created?: Timestamp | undefined;
    /**
     * Whether the consumer is paused now.
     *
     * @generated from field: bool paused = 8;
     */
    paused: boolean;
    /**
     * How long the pause has left, when paused.
     *
     * @generated from field: google.protobuf.Duration pause_remaining = 9;
     */
    pauseRemaining?: Duration | undefined;
    /**
     * Each priority group and whether a client is pinned to it (the pin
     * itself is never shown).
     *
     * @generated from field: repeated jetgate.v1.PriorityGroupState priority_groups = 10;
     */
    priorityGroups: PriorityGroupState[];
};
/**
 * Describes the message jetgate.v1.ConsumerState.
 * Use `create(ConsumerStateSchema)` to create a new message.
 */
export declare const ConsumerStateSchema: GenMessage<ConsumerState>;
/**
 * PriorityGroupState is one priority group's state.
 *
 * @generated from message jetgate.v1.PriorityGroupState
 */
export type PriorityGroupState = Message$1<"jetgate.v1.PriorityGroupState"> & {
    /**
     * The group's name.
     *
     * @generated from field: string group = 1;
     */
    group: string;
    /**
     * Whether a client is pinned to it.
     *
     * @generated from field: bool pinned = 2;
     */
    pinned: boolean;
    /**
     * Since when, when pinned.
     *
     * @generated from field: google.protobuf.Timestamp pinned_since = 3;
     */
    pinnedSince?: Timestamp | undefined;
};
/**
 * Describes the message jetgate.v1.PriorityGroupState.
 * Use `create(PriorityGroupStateSchema)` to create a new message.
 */
export declare const PriorityGroupStateSchema: GenMessage<PriorityGroupState>;
/**
 * SequencePair is a position in the consumer and in its stream.
 *
 * @generated from message jetgate.v1.SequencePair
 */
export type SequencePair = Message$1<"jetgate.v1.SequencePair"> & {
    /**
     * The consumer sequence.
     *
     * @generated from field: uint64 consumer_seq = 1;
     */
    consumerSeq: bigint;
    /**
     * The stream sequence.
     *
     * @generated from field: uint64 stream_seq = 2;
     */
    streamSeq: bigint;
    /**
     * When the position last moved, if known.
     *
     * @generated from field: google.protobuf.Timestamp last_active = 3;
     */
    lastActive?: Timestamp | undefined;
};
/**
 * Describes the message jetgate.v1.SequencePair.
 * Use `create(SequencePairSchema)` to create a new message.
 */
export declare const SequencePairSchema: GenMessage<SequencePair>;
/**
 * ListConsumersRequest names a stream.
 *
 * @generated from message jetgate.v1.ListConsumersRequest
 */
export type ListConsumersRequest = Message$1<"jetgate.v1.ListConsumersRequest"> & {
    /**
     * The stream whose consumers to list.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
};
/**
 * Describes the message jetgate.v1.ListConsumersRequest.
 * Use `create(ListConsumersRequestSchema)` to create a new message.
 */
export declare const ListConsumersRequestSchema: GenMessage<ListConsumersRequest>;
/**
 * ListConsumersResponse is the stream's consumers that this gateway serves.
 *
 * @generated from message jetgate.v1.ListConsumersResponse
 */
export type ListConsumersResponse = Message$1<"jetgate.v1.ListConsumersResponse"> & {
    /**
     * The consumers, by name.
     *
     * @generated from field: repeated jetgate.v1.ConsumerSummary consumers = 1;
     */
    consumers: ConsumerSummary[];
};
/**
 * Describes the message jetgate.v1.ListConsumersResponse.
 * Use `create(ListConsumersResponseSchema)` to create a new message.
 */
export declare const ListConsumersResponseSchema: GenMessage<ListConsumersResponse>;
/**
 * ConsumerSummary is one consumer's backlog, as the NATS server reports it.
 *
 * @generated from message jetgate.v1.ConsumerSummary
 */
export type ConsumerSummary = Message$1<"jetgate.v1.ConsumerSummary"> & {
    /**
     * The durable consumer's name.
     *
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * Messages not yet delivered.
     *
     * @generated from field: uint64 num_pending = 2;
     */
    numPending: bigint;
    /**
     * Messages delivered and not yet acknowledged.
     *
     * @generated from field: int64 num_ack_pending = 3;
     */
    numAckPending: bigint;
    /**
     * Messages delivered more than once and not yet acknowledged.
     *
     * @generated from field: int64 num_redelivered = 4;
     */
    numRedelivered: bigint;
    /**
     * Pull requests waiting on the server.
     *
     * @generated from field: int64 num_waiting = 5;
     */
    numWaiting: bigint;
    /**
     * How long the oldest message the consumer has not acknowledged has been
     * in the stream (0s when every message is acknowledged).
     *
     * @generated from field: google.protobuf.Duration oldest_unacked_age = 6;
     */
    oldestUnackedAge?: Duration | undefined;
    /**
     * Whether the consumer is paused now.
     *
     * @generated from field: bool paused = 7;
     */
    paused: boolean;
    /**
     * Until when, when paused.
     *
     * @generated from field: google.protobuf.Timestamp pause_until = 8;
     */
    pauseUntil?: Timestamp | undefined;
    /**
     * How many dead letters of the consumer wait in its dead-letter stream
     * (0 when it has none configured).
     *
     * @generated from field: int64 dead_letters = 9;
     */
    deadLetters: bigint;
    /**
     * Whether this gateway pushes the consumer's messages to an endpoint.
     *
     * @generated from field: bool pushed = 10;
     */
    pushed: boolean;
    /**
     * How many live leases the replica that answered holds on the consumer;
     * ListLeases counts those of every replica.
     *
     * @generated from field: int64 gateway_leases = 11;
     */
    gatewayLeases: bigint;
    /**
     * The consumer's priority groups, if any.
     *
     * @generated from field: repeated string priority_groups = 12;
     */
    priorityGroups: string[];
    /**
     * Whether the gateway has a dead-letter subject configured for it.
     *
     * @generated from field: bool dead_letter_configured = 13;
     */
    deadLetterConfigured: boolean;
    /**
     * The principal that created the consumer through the API; empty for a
     * consumer made otherwise.
     *
     * @generated from field: string created_by = 14;
     */
    createdBy: string;
};
/**
 * Describes the message jetgate.v1.ConsumerSummary.
 * Use `create(ConsumerSummarySchema)` to create a new message.
 */
export declare const ConsumerSummarySchema: GenMessage<ConsumerSummary>;
/**
 * ListLeasesRequest names a consumer.
 *
 * @generated from message jetgate.v1.ListLeasesRequest
 */
export type ListLeasesRequest = Message$1<"jetgate.v1.ListLeasesRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
};
/**
 * Describes the message jetgate.v1.ListLeasesRequest.
 * Use `create(ListLeasesRequestSchema)` to create a new message.
 */
export declare const ListLeasesRequestSchema: GenMessage<ListLeasesRequest>;
/**
 * ListLeasesResponse says who holds the consumer's live leases.
 *
 * @generated from message jetgate.v1.ListLeasesResponse
 */
export type ListLeasesResponse = Message$1<"jetgate.v1.ListLeasesResponse"> & {
    /**
     * One entry per principal holding leases, most leases first. The empty
     * principal is the caller of a gateway that authenticates nobody.
     *
     * @generated from field: repeated jetgate.v1.LeaseHolder holders = 1;
     */
    holders: LeaseHolder[];
    /**
     * The ids of the replicas that answered, the one asked included.
     *
     * @generated from field: repeated string replicas = 2;
     */
    replicas: string[];
    /**
     * The ids of the replicas that serve the consumer but did not answer in
     * time: their leases are not counted.
     *
     * @generated from field: repeated string missing_replicas = 3;
     */
    missingReplicas: string[];
};
/**
 * Describes the message jetgate.v1.ListLeasesResponse.
 * Use `create(ListLeasesResponseSchema)` to create a new message.
 */
export declare const ListLeasesResponseSchema: GenMessage<ListLeasesResponse>;
/**
 * LeaseHolder is one principal's live leases on a consumer.
 *
 * @generated from message jetgate.v1.LeaseHolder
 */
export type LeaseHolder = Message$1<"jetgate.v1.LeaseHolder"> & {
    /**
     * The principal the leases were handed to.
     *
     * @generated from field: string principal = 1;
     */
    principal: string;
    /**
     * How many live leases it holds, on every replica that answered.
     *
     * @generated from field: int64 leases = 2;
     */
    leases: bigint;
    /**
     * When the oldest of them was handed out.
     *
     * @generated from field: google.protobuf.Timestamp oldest_since = 3;
     */
    oldestSince?: Timestamp | undefined;
    /**
     * How long ago the oldest of them was handed out.
     *
     * @generated from field: google.protobuf.Duration oldest_age = 4;
     */
    oldestAge?: Duration | undefined;
    /**
     * The ids of the replicas that handed them out.
     *
     * @generated from field: repeated string replicas = 5;
     */
    replicas: string[];
    /**
     * The latest deadline among them: for a lease kept alive (Extend with a
     * duration), the deadline its caller asked for.
     *
     * @generated from field: google.protobuf.Timestamp latest_deadline = 6;
     */
    latestDeadline?: Timestamp | undefined;
    /**
     * How many of them their issuing replica keeps alive (Extend with a
     * duration).
     *
     * @generated from field: int64 kept = 7;
     */
    kept: bigint;
};
/**
 * Describes the message jetgate.v1.LeaseHolder.
 * Use `create(LeaseHolderSchema)` to create a new message.
 */
export declare const LeaseHolderSchema: GenMessage<LeaseHolder>;
/**
 * ListDeadLettersRequest asks for a page of a consumer's dead letters.
 *
 * @generated from message jetgate.v1.ListDeadLettersRequest
 */
export type ListDeadLettersRequest = Message$1<"jetgate.v1.ListDeadLettersRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * How many dead letters to return at most; unset or 0 is 20, at most
     * 100.
     *
     * @generated from field: int32 page_size = 3;
     */
    pageSize: number;
    /**
     * The next_page_token of the previous page; unset is the first page.
     *
     * @generated from field: string page_token = 4;
     */
    pageToken: string;
};
/**
 * Describes the message jetgate.v1.ListDeadLettersRequest.
 * Use `create(ListDeadLettersRequestSchema)` to create a new message.
 */
export declare const ListDeadLettersRequestSchema: GenMessage<ListDeadLettersRequest>;
/**
 * ListDeadLettersResponse is a page of dead letters.
 *
 * @generated from message jetgate.v1.ListDeadLettersResponse
 */
export type ListDeadLettersResponse = Message$1<"jetgate.v1.ListDeadLettersResponse"> & {
    /**
     * The dead letters, oldest first.
     *
     * @generated from field: repeated jetgate.v1.DeadLetter dead_letters = 1;
     */
    deadLetters: DeadLetter[];
    /**
     * The token of the next page; empty when this is the last one.
     *
     * @generated from field: string next_page_token = 2;
     */
    nextPageToken: string;
    /**
     * How many dead letters of the consumer wait in all.
     *
     * @generated from field: int64 total = 3;
     */
    total: bigint;
};
/**
 * Describes the message jetgate.v1.ListDeadLettersResponse.
 * Use `create(ListDeadLettersResponseSchema)` to create a new message.
 */
export declare const ListDeadLettersResponseSchema: GenMessage<ListDeadLettersResponse>;
/**
 * DeadLetter is one message the consumer gave up on, as its dead-letter
 * copy holds it.
 *
 * @generated from message jetgate.v1.DeadLetter
 */
export type DeadLetter = Message$1<"jetgate.v1.DeadLetter"> & {
    /**
     * Its sequence in the dead-letter stream: what Redrive takes in seqs.
     *
     * @generated from field: uint64 seq = 1;
     */
    seq: bigint;
    /**
     * The subject the original message was published to, where Redrive puts
     * it back.
     *
     * @generated from field: string subject = 2;
     */
    subject: string;
    /**
     * The copy's headers, the Jetgate-Dead-* ones included.
     *
     * @generated from field: map<string, jetgate.v1.HeaderValues> headers = 3;
     */
    headers: {
        [key: string]: HeaderValues;
    };
    /**
     * The first bytes of the message's data (at most 1024).
     *
     * @generated from field: bytes data_preview = 4;
     */
    dataPreview: Uint8Array;
    /**
     * The size of the whole data, in bytes.
     *
     * @generated from field: int64 data_size = 5;
     */
    dataSize: bigint;
    /**
     * When the copy was stored.
     *
     * @generated from field: google.protobuf.Timestamp time = 6;
     */
    time?: Timestamp | undefined;
    /**
     * Why it is a dead letter: MAX_DELIVERIES or TERM.
     *
     * @generated from field: string reason = 7;
     */
    reason: string;
    /**
     * The original message's sequence in the consumer's stream.
     *
     * @generated from field: uint64 stream_seq = 8;
     */
    streamSeq: bigint;
    /**
     * How many times the original message was delivered.
     *
     * @generated from field: int64 deliveries = 9;
     */
    deliveries: bigint;
};
/**
 * Describes the message jetgate.v1.DeadLetter.
 * Use `create(DeadLetterSchema)` to create a new message.
 */
export declare const DeadLetterSchema: GenMessage<DeadLetter>;
/**
 * SeekRequest names where a consumer delivers from next.
 *
 * @generated from message jetgate.v1.SeekRequest
 */
export type SeekRequest = Message$1<"jetgate.v1.SeekRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * Where to; exactly one.
     *
     * @generated from oneof jetgate.v1.SeekRequest.target
     */
    target: {
        /**
         * The first stream sequence delivered next (at least 1; at least the
         * consumer's opt_start_seq).
         *
         * @generated from field: uint64 sequence = 3;
         */
        value: bigint;
        case: "sequence";
    } | {
        /**
         * The first message stored at or after this time is delivered next;
         * a time after the last message's: only messages stored from now on.
         * Not in the future.
         *
         * @generated from field: google.protobuf.Timestamp time = 4;
         */
        value: Timestamp;
        case: "time";
    } | {
        /**
         * Deliver everything not acknowledged again, now (true).
         *
         * @generated from field: bool ack_floor = 5;
         */
        value: boolean;
        case: "ackFloor";
    } | {
        case: undefined;
        value?: undefined;
    };
};
/**
 * Describes the message jetgate.v1.SeekRequest.
 * Use `create(SeekRequestSchema)` to create a new message.
 */
export declare const SeekRequestSchema: GenMessage<SeekRequest>;
/**
 * SeekResponse is where the consumer delivers from now.
 *
 * @generated from message jetgate.v1.SeekResponse
 */
export type SeekResponse = Message$1<"jetgate.v1.SeekResponse"> & {
    /**
     * The stream sequence delivered next.
     *
     * @generated from field: uint64 reset_sequence = 1;
     */
    resetSequence: bigint;
    /**
     * The consumer's state after the seek, as GetConsumer shows it.
     *
     * @generated from field: jetgate.v1.ConsumerState state = 2;
     */
    state?: ConsumerState | undefined;
};
/**
 * Describes the message jetgate.v1.SeekResponse.
 * Use `create(SeekResponseSchema)` to create a new message.
 */
export declare const SeekResponseSchema: GenMessage<SeekResponse>;
/**
 * CreateConsumerRequest describes a consumer to create.
 *
 * @generated from message jetgate.v1.CreateConsumerRequest
 */
export type CreateConsumerRequest = Message$1<"jetgate.v1.CreateConsumerRequest"> & {
    /**
     * The stream to create it on.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * Its configuration: durable_name is its name. Unset fields take the
     * server's defaults; ack_policy, if set, must be ACK_POLICY_EXPLICIT.
     *
     * @generated from field: jetgate.v1.ConsumerConfig config = 2;
     */
    config?: ConsumerConfig | undefined;
};
/**
 * Describes the message jetgate.v1.CreateConsumerRequest.
 * Use `create(CreateConsumerRequestSchema)` to create a new message.
 */
export declare const CreateConsumerRequestSchema: GenMessage<CreateConsumerRequest>;
/**
 * CreateConsumerResponse is the consumer as the server made it.
 *
 * @generated from message jetgate.v1.CreateConsumerResponse
 */
export type CreateConsumerResponse = Message$1<"jetgate.v1.CreateConsumerResponse"> & {
    /**
     * Its configuration, as the server has it.
     *
     * @generated from field: jetgate.v1.ConsumerConfig config = 1;
     */
    config?: ConsumerConfig | undefined;
    /**
     * Its state.
     *
     * @generated from field: jetgate.v1.ConsumerState state = 2;
     */
    state?: ConsumerState | undefined;
};
/**
 * Describes the message jetgate.v1.CreateConsumerResponse.
 * Use `create(CreateConsumerResponseSchema)` to create a new message.
 */
export declare const CreateConsumerResponseSchema: GenMessage<CreateConsumerResponse>;
/**
 * UpdateConsumerRequest changes some fields of a consumer.
 *
 * @generated from message jetgate.v1.UpdateConsumerRequest
 */
export type UpdateConsumerRequest = Message$1<"jetgate.v1.UpdateConsumerRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
    /**
     * The new values of the fields update_mask names; others are ignored.
     *
     * @generated from field: jetgate.v1.ConsumerConfig config = 3;
     */
    config?: ConsumerConfig | undefined;
    /**
     * The fields to change (AIP-134): ack_wait, max_deliver, backoff,
     * filter_subjects, max_ack_pending, max_request_batch,
     * max_request_expires, max_request_max_bytes, description, metadata,
     * priority_groups, priority_policy, priority_timeout, inactive_threshold
     * (max_waiting is set at create alone: the server keeps it). In JSON,
     * camelCase and comma-separated: "ackWait,maxDeliver".
     *
     * @generated from field: google.protobuf.FieldMask update_mask = 4;
     */
    updateMask?: FieldMask | undefined;
};
/**
 * Describes the message jetgate.v1.UpdateConsumerRequest.
 * Use `create(UpdateConsumerRequestSchema)` to create a new message.
 */
export declare const UpdateConsumerRequestSchema: GenMessage<UpdateConsumerRequest>;
/**
 * UpdateConsumerResponse is the consumer as the server has it now.
 *
 * @generated from message jetgate.v1.UpdateConsumerResponse
 */
export type UpdateConsumerResponse = Message$1<"jetgate.v1.UpdateConsumerResponse"> & {
    /**
     * Its configuration.
     *
     * @generated from field: jetgate.v1.ConsumerConfig config = 1;
     */
    config?: ConsumerConfig | undefined;
    /**
     * Its state.
     *
     * @generated from field: jetgate.v1.ConsumerState state = 2;
     */
    state?: ConsumerState | undefined;
};
/**
 * Describes the message jetgate.v1.UpdateConsumerResponse.
 * Use `create(UpdateConsumerResponseSchema)` to create a new message.
 */
export declare const UpdateConsumerResponseSchema: GenMessage<UpdateConsumerResponse>;
/**
 * DeleteConsumerRequest names a consumer to delete.
 *
 * @generated from message jetgate.v1.DeleteConsumerRequest
 */
export type DeleteConsumerRequest = Message$1<"jetgate.v1.DeleteConsumerRequest"> & {
    /**
     * The stream the consumer belongs to.
     *
     * @generated from field: string stream = 1;
     */
    stream: string;
    /**
     * The durable consumer's name.
     *
     * @generated from field: string consumer = 2;
     */
    consumer: string;
};
/**
 * Describes the message jetgate.v1.DeleteConsumerRequest.
 * Use `create(DeleteConsumerRequestSchema)` to create a new message.
 */
export declare const DeleteConsumerRequestSchema: GenMessage<DeleteConsumerRequest>;
/**
 * DeleteConsumerResponse says the consumer was deleted.
 *
 * @generated from message jetgate.v1.DeleteConsumerResponse
 */
export type DeleteConsumerResponse = Message$1<"jetgate.v1.DeleteConsumerResponse"> & {};
/**
 * Describes the message jetgate.v1.DeleteConsumerResponse.
 * Use `create(DeleteConsumerResponseSchema)` to create a new message.
 */
export declare const DeleteConsumerResponseSchema: GenMessage<DeleteConsumerResponse>;
/**
 * EmptyReason says why a Fetch returned no messages.
 *
 * @generated from enum jetgate.v1.EmptyReason
 */
export declare enum EmptyReason {
    /**
     * Messages were returned.
     *
     * @generated from enum value: EMPTY_REASON_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * No message became available before expires passed.
     *
     * @generated from enum value: EMPTY_REASON_NO_MESSAGES = 1;
     */
    NO_MESSAGES = 1,
    /**
     * The consumer has max_ack_pending messages outstanding: settle some first.
     *
     * @generated from enum value: EMPTY_REASON_MAX_ACK_PENDING = 2;
     */
    MAX_ACK_PENDING = 2,
    /**
     * The next message is larger than max_bytes.
     *
     * @generated from enum value: EMPTY_REASON_MAX_BYTES = 3;
     */
    MAX_BYTES = 3,
    /**
     * The gateway has as many pulls waiting on the consumer as it allows.
     *
     * @generated from enum value: EMPTY_REASON_MAX_WAITING = 4;
     */
    MAX_WAITING = 4,
    /**
     * The consumer is paused (by anyone) until its pause_until.
     *
     * @generated from enum value: EMPTY_REASON_PAUSED = 5;
     */
    PAUSED = 5,
    /**
     * Another client holds the pin of the group (pinned_client): send the pin
     * with the Fetch, or wait until it is released or unpinned.
     *
     * @generated from enum value: EMPTY_REASON_PINNED = 6;
     */
    PINNED = 6,
    /**
     * Messages are pending, but fewer than min_pending and fewer acks pending
     * than min_ack_pending (overflow): the server serves this pull only past
     * them.
     *
     * @generated from enum value: EMPTY_REASON_BELOW_MIN_PENDING = 7;
     */
    BELOW_MIN_PENDING = 7
}
/**
 * Describes the enum jetgate.v1.EmptyReason.
 */
export declare const EmptyReasonSchema: GenEnum<EmptyReason>;
/**
 * DeliverPolicy says where a consumer starts in its stream.
 *
 * @generated from enum jetgate.v1.DeliverPolicy
 */
export declare enum DeliverPolicy {
    /**
     * Not set.
     *
     * @generated from enum value: DELIVER_POLICY_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * From the first message.
     *
     * @generated from enum value: DELIVER_POLICY_ALL = 1;
     */
    ALL = 1,
    /**
     * From the last message.
     *
     * @generated from enum value: DELIVER_POLICY_LAST = 2;
     */
    LAST = 2,
    /**
     * Only messages stored after the consumer was created.
     *
     * @generated from enum value: DELIVER_POLICY_NEW = 3;
     */
    NEW = 3,
    /**
     * From opt_start_seq.
     *
     * @generated from enum value: DELIVER_POLICY_BY_START_SEQUENCE = 4;
     */
    BY_START_SEQUENCE = 4,
    /**
     * From opt_start_time.
     *
     * @generated from enum value: DELIVER_POLICY_BY_START_TIME = 5;
     */
    BY_START_TIME = 5,
    /**
     * The last message of each subject.
     *
     * @generated from enum value: DELIVER_POLICY_LAST_PER_SUBJECT = 6;
     */
    LAST_PER_SUBJECT = 6
}
/**
 * Describes the enum jetgate.v1.DeliverPolicy.
 */
export declare const DeliverPolicySchema: GenEnum<DeliverPolicy>;
/**
 * AckPolicy says which messages need an acknowledgement.
 *
 * @generated from enum jetgate.v1.AckPolicy
 */
export declare enum AckPolicy {
    /**
     * Not set.
     *
     * @generated from enum value: ACK_POLICY_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * Every message is acknowledged on its own.
     *
     * @generated from enum value: ACK_POLICY_EXPLICIT = 1;
     */
    EXPLICIT = 1,
    /**
     * Acknowledging a message acknowledges every one before it.
     *
     * @generated from enum value: ACK_POLICY_ALL = 2;
     */
    ALL = 2,
    /**
     * No acknowledgements.
     *
     * @generated from enum value: ACK_POLICY_NONE = 3;
     */
    NONE = 3
}
/**
 * Describes the enum jetgate.v1.AckPolicy.
 */
export declare const AckPolicySchema: GenEnum<AckPolicy>;
/**
 * PriorityPolicy says how a consumer's priority groups are served.
 *
 * @generated from enum jetgate.v1.PriorityPolicy
 */
export declare enum PriorityPolicy {
    /**
     * No priority groups.
     *
     * @generated from enum value: PRIORITY_POLICY_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * Pulls that set min_pending or min_ack_pending get messages only past
     * those thresholds.
     *
     * @generated from enum value: PRIORITY_POLICY_OVERFLOW = 1;
     */
    OVERFLOW = 1,
    /**
     * One client at a time is pinned and gets every message.
     *
     * @generated from enum value: PRIORITY_POLICY_PINNED_CLIENT = 2;
     */
    PINNED_CLIENT = 2,
    /**
     * Pulls of a lower priority number are served first.
     *
     * @generated from enum value: PRIORITY_POLICY_PRIORITIZED = 3;
     */
    PRIORITIZED = 3
}
/**
 * Describes the enum jetgate.v1.PriorityPolicy.
 */
export declare const PriorityPolicySchema: GenEnum<PriorityPolicy>;
/**
 * ConsumerService leases messages from a JetStream durable pull consumer and
 * settles them. Every message handed out is a lease addressed by an opaque
 * token; the lease belongs to the caller until it is settled or its deadline
 * passes, after which JetStream redelivers the message.
 *
 * @generated from service jetgate.v1.ConsumerService
 */
export declare const ConsumerService: GenService<{
    /**
     * Fetch leases up to batch messages. It returns as soon as at least one
     * message is available, or empty when expires passes with none.
     *
     * @generated from rpc jetgate.v1.ConsumerService.Fetch
     */
    fetch: {
        methodKind: "unary";
        input: typeof FetchRequestSchema;
        output: typeof FetchResponseSchema;
    };
    /**
     * Ack finishes each token's message (+ACK). The RPC succeeds for a well
     * formed request and lists each token that could not be acked.
     *
     * @generated from rpc jetgate.v1.ConsumerService.Ack
     */
    ack: {
        methodKind: "unary";
        input: typeof AckRequestSchema;
        output: typeof AckResponseSchema;
    };
    /**
     * Nak asks for each token's message to be redelivered (-NAK), at once or
     * after delay.
     *
     * @generated from rpc jetgate.v1.ConsumerService.Nak
     */
    nak: {
        methodKind: "unary";
        input: typeof NakRequestSchema;
        output: typeof NakResponseSchema;
    };
    /**
     * Term ends each token's message (+TERM): it is never redelivered.
     *
     * @generated from rpc jetgate.v1.ConsumerService.Term
     */
    term: {
        methodKind: "unary";
        input: typeof TermRequestSchema;
        output: typeof TermResponseSchema;
    };
    /**
     * Extend restarts each lease's clock (+WPI) and returns its new deadline
     * and a new token that carries it.
     *
     * @generated from rpc jetgate.v1.ConsumerService.Extend
     */
    extend: {
        methodKind: "unary";
        input: typeof ExtendRequestSchema;
        output: typeof ExtendResponseSchema;
    };
    /**
     * GetConsumer returns the consumer's configuration and live state, and how
     * many leases this gateway holds on it.
     *
     * @generated from rpc jetgate.v1.ConsumerService.GetConsumer
     */
    getConsumer: {
        methodKind: "unary";
        input: typeof GetConsumerRequestSchema;
        output: typeof GetConsumerResponseSchema;
    };
    /**
     * Redrive republishes dead letters of the consumer to their original
     * subjects and removes them from the dead-letter stream once the
     * republish is confirmed. The RPC succeeds for a well formed request and
     * lists each dead letter that could not be redriven.
     *
     * @generated from rpc jetgate.v1.ConsumerService.Redrive
     */
    redrive: {
        methodKind: "unary";
        input: typeof RedriveRequestSchema;
        output: typeof RedriveResponseSchema;
    };
    /**
     * Consume streams leased messages as they come, never holding more than
     * max_messages unsettled leases at once. Settle them with Ack, Nak, Term
     * or Extend (on any replica); each settle gives credit back. An empty
     * response is a heartbeat, sent every heartbeat while idle. When the
     * stream ends, its unsettled leases are nak'ed back at once.
     *
     * @generated from rpc jetgate.v1.ConsumerService.Consume
     */
    consume: {
        methodKind: "server_streaming";
        input: typeof ConsumeRequestSchema;
        output: typeof ConsumeResponseSchema;
    };
    /**
     * Pause stops the server delivering the consumer's messages until
     * pause_until, for every client of the consumer (jetgate's and others').
     * A Fetch on a paused consumer waits as usual and, empty, says
     * EMPTY_REASON_PAUSED.
     *
     * @generated from rpc jetgate.v1.ConsumerService.Pause
     */
    pause: {
        methodKind: "unary";
        input: typeof PauseRequestSchema;
        output: typeof PauseResponseSchema;
    };
    /**
     * Resume lets a paused consumer deliver again at once.
     *
     * @generated from rpc jetgate.v1.ConsumerService.Resume
     */
    resume: {
        methodKind: "unary";
        input: typeof ResumeRequestSchema;
        output: typeof ResumeResponseSchema;
    };
    /**
     * Unpin releases the pinned client of a priority group (pinned_client
     * policy): the next pull of the group is pinned in its place.
     *
     * @generated from rpc jetgate.v1.ConsumerService.Unpin
     */
    unpin: {
        methodKind: "unary";
        input: typeof UnpinRequestSchema;
        output: typeof UnpinResponseSchema;
    };
    /**
     * ListConsumers lists the consumers of a stream that this gateway serves
     * and that the caller may read, with the backlog of each. One listing
     * request to the NATS server answers for up to 256 consumers of the
     * stream; a consumer with unacknowledged messages costs one more request
     * to date its oldest.
     *
     * @generated from rpc jetgate.v1.ConsumerService.ListConsumers
     */
    listConsumers: {
        methodKind: "unary";
        input: typeof ListConsumersRequestSchema;
        output: typeof ListConsumersResponseSchema;
    };
    /**
     * ListLeases lists who holds the consumer's live leases, by principal,
     * across every replica of the gateway: each replica answers for its own
     * over NATS, and a replica that does not answer in time is named in
     * missing_replicas.
     *
     * @generated from rpc jetgate.v1.ConsumerService.ListLeases
     */
    listLeases: {
        methodKind: "unary";
        input: typeof ListLeasesRequestSchema;
        output: typeof ListLeasesResponseSchema;
    };
    /**
     * ListDeadLetters lists a page of the consumer's dead letters, oldest
     * first: the headers of each and a preview of its data.
     *
     * @generated from rpc jetgate.v1.ConsumerService.ListDeadLetters
     */
    listDeadLetters: {
        methodKind: "unary";
        input: typeof ListDeadLettersRequestSchema;
        output: typeof ListDeadLettersResponseSchema;
    };
    /**
     * Seek moves where the consumer delivers from: to a stream sequence, to
     * the first message stored at or after a time, or to its ack floor
     * (everything not acknowledged is delivered again, now). It is the
     * server's consumer reset (nats-server 2.14 or later): every replica voids
     * the consumer's leases before a new delivery is handed out, and a token
     * from before is refused.
     *
     * @generated from rpc jetgate.v1.ConsumerService.Seek
     */
    seek: {
        methodKind: "unary";
        input: typeof SeekRequestSchema;
        output: typeof SeekResponseSchema;
    };
    /**
     * CreateConsumer creates a durable pull consumer with explicit acks,
     * within the bounds of the gateway's admin block; every replica serves it
     * at once. Its metadata names the principal that created it.
     *
     * @generated from rpc jetgate.v1.ConsumerService.CreateConsumer
     */
    createConsumer: {
        methodKind: "unary";
        input: typeof CreateConsumerRequestSchema;
        output: typeof CreateConsumerResponseSchema;
    };
    /**
     * UpdateConsumer changes the fields update_mask names of a consumer
     * created through the API.
     *
     * @generated from rpc jetgate.v1.ConsumerService.UpdateConsumer
     */
    updateConsumer: {
        methodKind: "unary";
        input: typeof UpdateConsumerRequestSchema;
        output: typeof UpdateConsumerResponseSchema;
    };
    /**
     * DeleteConsumer deletes a consumer created through the API: its leases
     * are void, and callers waiting on it are answered.
     *
     * @generated from rpc jetgate.v1.ConsumerService.DeleteConsumer
     */
    deleteConsumer: {
        methodKind: "unary";
        input: typeof DeleteConsumerRequestSchema;
        output: typeof DeleteConsumerResponseSchema;
    };
}>;

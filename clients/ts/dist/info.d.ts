import type { Code } from "@connectrpc/connect";
import type * as pb from "./gen/jetgate/v1/consumer_pb.js";
import type * as spb from "./gen/jetgate/v1/stream_pb.js";
import { AckPolicy, DeliverPolicy, EmptyReason, PriorityPolicy } from "./gen/jetgate/v1/consumer_pb.js";
export { AckPolicy, DeliverPolicy, PriorityPolicy };
/** Why a fetch returned no messages ("" when it returned some). */
export type EmptyReasonName = "" | Exclude<keyof typeof EmptyReason, "UNSPECIFIED">;
/** A consumer's configuration, as the server has it. Durations in ms. */
export interface ConsumerConfig {
    durableName: string;
    deliverPolicy: DeliverPolicy;
    optStartSeq: number;
    optStartTime?: Date;
    ackPolicy: AckPolicy;
    ackWait: number;
    /** -1: unlimited. */
    maxDeliver: number;
    backoff: number[];
    filterSubjects: string[];
    maxWaiting: number;
    maxAckPending: number;
    maxRequestBatch: number;
    maxRequestExpires: number;
    /** The largest maxBytes one pull may ask for (0: unlimited); a message larger is refused MESSAGE_TOO_LARGE. */
    maxRequestMaxBytes: number;
    numReplicas: number;
    description: string;
    priorityGroups: string[];
    priorityPolicy: PriorityPolicy;
    priorityTimeout: number;
    pauseUntil?: Date;
    /** A consumer created through the API carries `jetgate.created_by`, its creator. */
    metadata: Record<string, string>;
    /** How long the server keeps the consumer without a pull (ms; 0: never deletes it). */
    inactiveThreshold: number;
}
/** A position in a consumer and in its stream. */
export interface SequencePair {
    consumerSeq: number;
    streamSeq: number;
    lastActive?: Date;
}
/** A consumer's live state, as the server reports it. */
export interface ConsumerState {
    numPending: number;
    numAckPending: number;
    numRedelivered: number;
    numWaiting: number;
    delivered: SequencePair;
    ackFloor: SequencePair;
    created?: Date;
    paused: boolean;
    /** ms. */
    pauseRemaining: number;
    priorityGroups: {
        group: string;
        pinned: boolean;
        pinnedSince?: Date;
    }[];
}
/** How one gateway pushes a consumer's messages to its endpoint. */
export interface PushState {
    url: string;
    inFlight: number;
    endpointUp: boolean;
    lastError: string;
    lastErrorTime?: Date;
}
/** What Client.getConsumer answers. */
export interface ConsumerInfo {
    config: ConsumerConfig;
    state: ConsumerState;
    /** Live leases this gateway holds on the consumer. */
    gatewayLeases: number;
    /** Dead letters waiting (0 without a dead-letter subject). */
    deadLetters: number;
    /** ms since the oldest unacknowledged message was stored (0: none). */
    oldestUnackedAge: number;
    /** Set when this gateway pushes the consumer. */
    push?: PushState;
}
/** One consumer of ListConsumers, with its backlog. */
export interface ConsumerSummary {
    name: string;
    numPending: number;
    numAckPending: number;
    numRedelivered: number;
    numWaiting: number;
    /** ms. */
    oldestUnackedAge: number;
    paused: boolean;
    pauseUntil?: Date;
    deadLetters: number;
    pushed: boolean;
    gatewayLeases: number;
    priorityGroups: string[];
    deadLetterConfigured: boolean;
    /** The principal that created it through the API; "" for one made otherwise. */
    createdBy: string;
}
/** One stream of ListStreams, with its size. */
export interface StreamSummary {
    name: string;
    subjects: string[];
    messages: number;
    bytes: number;
    firstSeq: number;
    lastSeq: number;
    /** Its consumers this gateway serves that the caller may read. */
    consumers: number;
}
/** One principal's live leases on a consumer, across the replicas that answered. */
export interface LeaseHolder {
    principal: string;
    leases: number;
    oldestSince?: Date;
    /** ms. */
    oldestAge: number;
    replicas: string[];
    latestDeadline?: Date;
    /** How many of them their replica keeps alive (Extend with a duration). */
    kept: number;
}
/** What Client.listLeases answers. */
export interface Leases {
    holders: LeaseHolder[];
    replicas: string[];
    /** Replicas that serve the consumer but did not answer in time: their leases are not counted. */
    missingReplicas: string[];
}
/** One dead letter, as its copy in the dead-letter stream holds it. */
export interface DeadLetter {
    /** Its sequence in the dead-letter stream: what redrive takes. */
    seq: number;
    subject: string;
    headers: Record<string, string[]>;
    /** The first bytes of its data (at most 1024). */
    dataPreview: Uint8Array;
    dataSize: number;
    time?: Date;
    /** MAX_DELIVERIES or TERM. */
    reason: string;
    /** The original message's sequence in the consumer's stream. */
    streamSeq: number;
    deliveries: number;
}
/** A page of dead letters, oldest first. */
export interface DeadLetterPage {
    deadLetters: DeadLetter[];
    /** Pass it as pageToken for the next page; "" on the last one. */
    nextPageToken: string;
    total: number;
}
/** What Client.redrive answers: how many were republished, and which were not. */
export interface RedriveResult {
    redriven: number;
    failures: {
        seq: number;
        code: Code;
        reason: string;
        message: string;
    }[];
}
/** What Client.seek answers: where the consumer delivers from now. */
export interface SeekResult {
    /** The stream sequence delivered next. */
    resetSequence: number;
    /** The consumer's state after the seek. */
    state: ConsumerState;
}
/** What Client.createConsumer and updateConsumer answer: the consumer as the server has it. */
export interface ConsumerResult {
    config: ConsumerConfig;
    state: ConsumerState;
}
/** A consumer's pause as the server took it. */
export interface PauseState {
    paused: boolean;
    pauseUntil?: Date;
}
/** @internal */
export declare function headersOf(h: Record<string, pb.HeaderValues>): Record<string, string[]>;
/** @internal */
export declare function consumerConfig(c: pb.ConsumerConfig | undefined): ConsumerConfig;
/** @internal */
export declare function consumerState(s: pb.ConsumerState | undefined): ConsumerState;
/** @internal */
export declare function consumerInfo(r: pb.GetConsumerResponse): ConsumerInfo;
/** @internal */
export declare function consumerSummary(c: pb.ConsumerSummary): ConsumerSummary;
/** @internal */
export declare function streamSummary(s: spb.StreamSummary): StreamSummary;
/** @internal */
export declare function leases(r: pb.ListLeasesResponse): Leases;
/** @internal */
export declare function deadLetterPage(r: pb.ListDeadLettersResponse): DeadLetterPage;
/** @internal */
export declare function redriveResult(r: pb.RedriveResponse): RedriveResult;
/** @internal */
export declare function emptyReasonName(r: EmptyReason): EmptyReasonName;

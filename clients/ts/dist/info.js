// The library's own shapes of what the API answers about consumers, streams,
// leases and dead letters: numbers for counts and sequences, milliseconds
// for durations, Dates for times. The generated types (v1, streamv1) keep
// protobuf's bigint for every 64-bit field.
import { durationMs, timestampDate } from "@bufbuild/protobuf/wkt";
import { AckPolicy, DeliverPolicy, EmptyReason, PriorityPolicy } from "./gen/jetgate/v1/consumer_pb.js";
export { AckPolicy, DeliverPolicy, PriorityPolicy };
const ms = (d) => (d ? durationMs(d) : 0);
const date = (t) => (t ? timestampDate(t) : undefined);
const num = Number;
function seqPair(p) {
    return { consumerSeq: num(p?.consumerSeq ?? 0n), streamSeq: num(p?.streamSeq ?? 0n), lastActive: date(p?.lastActive) };
}
/** @internal */
export function headersOf(h) {
    const out = {};
    for (const [k, v] of Object.entries(h)) {
        out[k] = [...v.values];
    }
    return out;
}
/** @internal */
export function consumerConfig(c) {
    return {
        durableName: c?.durableName ?? "",
        deliverPolicy: c?.deliverPolicy ?? DeliverPolicy.UNSPECIFIED,
        optStartSeq: num(c?.optStartSeq ?? 0n),
        optStartTime: date(c?.optStartTime),
        ackPolicy: c?.ackPolicy ?? AckPolicy.UNSPECIFIED,
        ackWait: ms(c?.ackWait),
        maxDeliver: num(c?.maxDeliver ?? 0n),
        backoff: (c?.backoff ?? []).map(ms),
        filterSubjects: [...(c?.filterSubjects ?? [])],
        maxWaiting: num(c?.maxWaiting ?? 0n),
        maxAckPending: num(c?.maxAckPending ?? 0n),
        maxRequestBatch: num(c?.maxRequestBatch ?? 0n),
        maxRequestExpires: ms(c?.maxRequestExpires),
        maxRequestMaxBytes: num(c?.maxRequestMaxBytes ?? 0n),
        numReplicas: c?.numReplicas ?? 0,
        description: c?.description ?? "",
        priorityGroups: [...(c?.priorityGroups ?? [])],
        priorityPolicy: c?.priorityPolicy ?? PriorityPolicy.UNSPECIFIED,
        priorityTimeout: ms(c?.priorityTimeout),
        pauseUntil: date(c?.pauseUntil),
        metadata: { ...(c?.metadata ?? {}) },
        inactiveThreshold: ms(c?.inactiveThreshold),
    };
}
/** @internal */
export function consumerState(s) {
    return {
        numPending: num(s?.numPending ?? 0n),
        numAckPending: num(s?.numAckPending ?? 0n),
        numRedelivered: num(s?.numRedelivered ?? 0n),
        numWaiting: num(s?.numWaiting ?? 0n),
        delivered: seqPair(s?.delivered),
        ackFloor: seqPair(s?.ackFloor),
        created: date(s?.created),
        paused: s?.paused ?? false,
        pauseRemaining: ms(s?.pauseRemaining),
        priorityGroups: (s?.priorityGroups ?? []).map((g) => ({ group: g.group, pinned: g.pinned, pinnedSince: date(g.pinnedSince) })),
    };
}
/** @internal */
export function consumerInfo(r) {
    return {
        config: consumerConfig(r.config),
        state: consumerState(r.state),
        gatewayLeases: num(r.gatewayLeases),
        deadLetters: num(r.deadLetters),
        oldestUnackedAge: ms(r.oldestUnackedAge),
        push: r.push
            ? { url: r.push.url, inFlight: r.push.inFlight, endpointUp: r.push.endpointUp, lastError: r.push.lastError, lastErrorTime: date(r.push.lastErrorTime) }
            : undefined,
    };
}
/** @internal */
export function consumerSummary(c) {
    return {
        name: c.name,
        numPending: num(c.numPending),
        numAckPending: num(c.numAckPending),
        numRedelivered: num(c.numRedelivered),
        numWaiting: num(c.numWaiting),
        oldestUnackedAge: ms(c.oldestUnackedAge),
        paused: c.paused,
        pauseUntil: date(c.pauseUntil),
        deadLetters: num(c.deadLetters),
        pushed: c.pushed,
        gatewayLeases: num(c.gatewayLeases),
        priorityGroups: [...c.priorityGroups],
        deadLetterConfigured: c.deadLetterConfigured,
        createdBy: c.createdBy,
    };
}
/** @internal */
export function streamSummary(s) {
    return {
        name: s.name,
        subjects: [...s.subjects],
        messages: num(s.messages),
        bytes: num(s.bytes),
        firstSeq: num(s.firstSeq),
        lastSeq: num(s.lastSeq),
        consumers: s.consumers,
    };
}
/** @internal */
export function leases(r) {
    return {
        holders: r.holders.map((h) => ({
            principal: h.principal,
            leases: num(h.leases),
            oldestSince: date(h.oldestSince),
            oldestAge: ms(h.oldestAge),
            replicas: [...h.replicas],
            latestDeadline: date(h.latestDeadline),
            kept: num(h.kept),
        })),
        replicas: [...r.replicas],
        missingReplicas: [...r.missingReplicas],
    };
}
/** @internal */
export function deadLetterPage(r) {
    return {
        deadLetters: r.deadLetters.map((d) => ({
            seq: num(d.seq),
            subject: d.subject,
            headers: headersOf(d.headers),
            dataPreview: d.dataPreview,
            dataSize: num(d.dataSize),
            time: date(d.time),
            reason: d.reason,
            streamSeq: num(d.streamSeq),
            deliveries: num(d.deliveries),
        })),
        nextPageToken: r.nextPageToken,
        total: num(r.total),
    };
}
/** @internal */
export function redriveResult(r) {
    return {
        redriven: num(r.redriven),
        failures: r.failures.map((f) => ({ seq: num(f.seq), code: f.code, reason: f.reason, message: f.message })),
    };
}
/** @internal */
export function emptyReasonName(r) {
    return r === EmptyReason.UNSPECIFIED ? "" : EmptyReason[r] ?? "";
}

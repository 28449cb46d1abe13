import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConsumerConfigSchema, SeekRequestSchema } from "./gen/jetgate/v1/consumer_pb.js";
import type { ConsumerConfig } from "./info.js";
/** Where Client.seek moves a consumer to: exactly one of these. */
export type SeekTarget = 
/** The first stream sequence delivered next (1 or more). */
{
    sequence: number;
}
/** The first message stored at or after this time (not in the future). */
 | {
    time: Date;
}
/** Everything not acknowledged is delivered again, now. */
 | {
    ackFloor: true;
};
/**
 * A consumer's configuration for Client.createConsumer (durableName is its
 * name) and updateConsumer: ConsumerConfig's fields, any left out;
 * durations in ms, times as Dates, counts as numbers.
 */
export type ConsumerConfigInput = Partial<ConsumerConfig>;
type PbConfig = MessageInitShape<typeof ConsumerConfigSchema>;
/** @internal The API's ConsumerConfig for the fields given; a RangeError for a field it has not or a value that does not fit. */
export declare function configPb(config: ConsumerConfigInput): PbConfig;
/**
 * @internal The API's field names (snake_case) for an update mask: an array,
 * or one string separated by commas, of ConsumerConfig's fields in either
 * case ("ackWait,maxDeliver" or ["ack_wait"]).
 */
export declare function maskPaths(mask: string | string[]): string[];
/** @internal The target of a SeekRequest; a RangeError unless exactly one is given. */
export declare function seekTargetPb(to: SeekTarget): MessageInitShape<typeof SeekRequestSchema>["target"];
export {};

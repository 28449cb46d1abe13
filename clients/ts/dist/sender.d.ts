import { type Client as RpcClient } from "@connectrpc/connect";
import { ConsumerService } from "./gen/jetgate/v1/consumer_pb.js";
/** The settles a lease takes, and Extend. */
export type Op = "ack" | "nak" | "term" | "extend";
/** A lease after an Extend: its new token and deadline. */
export interface Extended {
    token: string;
    deadline: Date;
}
/**
 * Sender batches settles: calls for the same stream, consumer, op and
 * argument within delayMs (or until batch tokens wait) go as one RPC, and
 * each caller learns its own token's outcome. A call that fails as a whole
 * with a retryable code is sent again with backoff until its lease's deadline.
 */
export declare class Sender {
    #private;
    constructor(api: RpcClient<typeof ConsumerService>, batch: number, delayMs: number);
    /** send settles one token; it resolves once the gateway confirmed it. */
    send(stream: string, consumer: string, op: Op, token: string, deadline: number, arg?: string | number): Promise<Extended | undefined>;
    /** flush sends everything waiting now. */
    flush(): void;
    /** idle resolves once nothing is waiting, in flight, or to be sent again. */
    idle(): Promise<void>;
}

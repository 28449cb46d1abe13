export { Client } from "./client.js";
export type {
  ClientOptions, TlsOptions, PublishOptions, PublishAck, BatchMessage, BatchAck, FetchOptions, FetchResult,
  PauseOptions, DeadLetterPageOptions,
} from "./client.js";
export { AckPolicy, DeliverPolicy, PriorityPolicy } from "./info.js";
export type {
  ConsumerInfo, ConsumerConfig, ConsumerState, SequencePair, PushState, ConsumerSummary, StreamSummary, Leases,
  LeaseHolder, DeadLetter, DeadLetterPage, RedriveResult, PauseState, EmptyReasonName, SeekResult, ConsumerResult,
} from "./info.js";
export type { SeekTarget, ConsumerConfigInput } from "./admin.js";
export { Message } from "./message.js";
export type { Metadata, NakOptions, TermOptions, ExtendOptions } from "./message.js";
export { Subscription } from "./subscriber.js";
export type { Handler, SubscribeOptions, CloseOptions, SubscriptionStats } from "./subscriber.js";
export { SettleError, FinalError, LeaseError, reasonOf } from "./errors.js";
export * as v1 from "./gen/jetgate/v1/consumer_pb.js";
export * as streamv1 from "./gen/jetgate/v1/stream_pb.js";

package auth

// AssertedPrincipal is the metadata key by which the REST side, which
// authenticates an HTTP request itself, tells the gRPC chain who the caller
// is, on its own road into the services that no caller outside the process
// reaches (server.Guard.ForREST). It is a binary key (-bin): a principal (an
// API key's name, a JWT's subject) may be any text, and gRPC metadata of
// other keys takes printable ASCII only.
const AssertedPrincipal = "jetgate-internal-principal-bin"

// AssertedUntil goes with AssertedPrincipal where the REST caller's
// credential lapses (a JWT's exp): when, in Unix milliseconds.
const AssertedUntil = "jetgate-internal-until"

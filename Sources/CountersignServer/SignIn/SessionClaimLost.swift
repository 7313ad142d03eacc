/// The record a sign-in was to be collected from moved on before its session was stored (another request
/// collected it): nothing was written. The collecting feature reads the record again and decides; this
/// never reaches a client.
struct SessionClaimLost: Error {}

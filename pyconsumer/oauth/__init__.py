"""OAuth 2 tokens from a token endpoint, for whoever needs a bearer token: the consumer's SASL
OAUTHBEARER connections and the Schema Registry client. Knows HTTP and JWTs, not Kafka: the
callers give the setting names their errors should name and the error class to raise.
"""

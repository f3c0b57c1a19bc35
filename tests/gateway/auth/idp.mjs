// A real OpenID Connect provider for pegboard's auth tests (the certified `oidc-provider`).
// argv: PORT AUDIENCE; env: OIDC_PROVIDER_URL (file URL of oidc-provider's lib/index.js),
// OIDC_JWKS (the private signing keys, a JSON JWKS written by the test).
// Clients (client_credentials grant, JWT access tokens for AUDIENCE with a groups claim):
// alice (group ops), bob (group dev), carol (no group).
const { default: Provider } = await import(process.env.OIDC_PROVIDER_URL);
const port = Number(process.argv[2]);
const audience = process.argv[3];
const issuer = `http://127.0.0.1:${port}`;
const people = { alice: ['ops'], bob: ['dev'], carol: [] };
const provider = new Provider(issuer, {
  clients: Object.keys(people).map((id) => ({
    client_id: id,
    client_secret: `${id}-secret`,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
  })),
  jwks: JSON.parse(process.env.OIDC_JWKS),
  features: {
    clientCredentials: { enabled: true },
    devInteractions: { enabled: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => ({
        scope: 'mcp',
        audience: resource,
        accessTokenFormat: 'jwt',
        accessTokenTTL: 600,
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  ttl: { ClientCredentials: 600 },
  extraTokenClaims: (ctx, token) => ({ groups: people[token.clientId] ?? [] }),
});
provider.listen(port, '127.0.0.1', () => console.log(`ready ${issuer}`));

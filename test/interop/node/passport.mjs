// Issues and verifies Autonomy Envelope passports with jose, for
// test/interop/passport_integration_test.go. One argument, a JSON request:
//   {"op":"issue","seed":B64URL,"x":B64URL,"kid":DID,"claims":{...}}
//     prints the compact JWS (RFC 7515, Section 3.1; alg EdDSA, RFC 8037);
//   {"op":"verify","token":JWS,"x":B64URL,"aud":DID,"now":SECONDS}
//     prints the verified payload as JSON, or exits 1 with the error.
import { SignJWT, jwtVerify, importJWK } from 'jose';

const req = JSON.parse(process.argv[2]);
try {
  if (req.op === 'issue') {
    const key = await importJWK({ kty: 'OKP', crv: 'Ed25519', x: req.x, d: req.seed }, 'EdDSA');
    const jws = await new SignJWT(req.claims).setProtectedHeader({ alg: 'EdDSA', kid: req.kid }).sign(key);
    process.stdout.write(jws + '\n');
  } else if (req.op === 'verify') {
    const key = await importJWK({ kty: 'OKP', crv: 'Ed25519', x: req.x }, 'EdDSA');
    const { payload, protectedHeader } = await jwtVerify(req.token, key, {
      algorithms: ['EdDSA'], audience: req.aud, currentDate: new Date(req.now * 1000),
    });
    process.stdout.write(JSON.stringify({ header: protectedHeader, payload }) + '\n');
  } else {
    throw new Error('unknown op ' + req.op);
  }
} catch (e) {
  process.stderr.write(String(e && e.message || e) + '\n');
  process.exit(1);
}

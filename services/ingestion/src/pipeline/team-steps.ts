// The per-project work around a batch write: before it, load the settings of the batch's teams
// (one read, cached) and apply GeoIP and anonymize_ips to each event (pipeline/enrich.ts); after
// it, set ingested_event on teams whose first stored event this was (one UPDATE, once per team).
import type { GeoIp } from '@sett/geoip';
import type { TeamSettingsStore } from '../teams/team-settings';
import { enrichEvents } from './enrich';
import type { TeamEvent } from './types';

export type TeamSteps = {
  /** Throws when the settings cannot be read (Postgres): the batch stage is retried. */
  beforeWrite(events: TeamEvent[]): Promise<void>;
  afterWrite(events: TeamEvent[]): Promise<void>;
};

const teamsOf = (events: TeamEvent[]) => [...new Set(events.map((e) => e.teamId))];

export function createTeamSteps(deps: {
  settings: TeamSettingsStore;
  geoip: GeoIp;
  onLocated?: (count: number) => void;
}): TeamSteps {
  return {
    async beforeWrite(events) {
      const settings = await deps.settings.load(teamsOf(events));
      const located = enrichEvents(events, settings, deps.geoip);
      deps.onLocated?.(located);
    },
    async afterWrite(events) {
      await deps.settings.markIngested(teamsOf(events));
    },
  };
}

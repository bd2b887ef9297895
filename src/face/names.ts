// The names pi knows the package's command and outputs by: index.ts registers them at start-up, before
// the command itself (command.ts) is loaded.

export const COMMAND_NAME = "selfskills";
/** customType of an output shown to the human; the model never sees these (index.ts drops them from its context). */
export const OUTPUT_MESSAGE_TYPE = "selfskills";

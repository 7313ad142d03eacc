// Where the web client's files are: the one place the WebUnit tests that read them as files name it.
import { fileURLToPath } from "node:url";

export const WEB = fileURLToPath(new URL("../../../Sources/CountersignWebClient/web/", import.meta.url));

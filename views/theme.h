// Light and dark themes: the application palette (Fusion style), and what the graph and code
// views draw with. The choice is kept in QSettings ("theme": light | dark).
#pragma once

namespace ls {
void apply_theme(bool dark);  // restyles every open widget
bool dark_theme();
}  // namespace ls

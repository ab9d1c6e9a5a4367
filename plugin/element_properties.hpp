// The nccmatch element's GObject properties (element_properties.cpp).
#pragma once

#include <glib-object.h>

namespace nccmatch::plugin::element {

// Installs every property on the class.
void installProperties(GObjectClass* gobject_class);
// GObjectClass::set_property / get_property.
void setProperty(GObject* object, guint prop_id, const GValue* value, GParamSpec* pspec);
void getProperty(GObject* object, guint prop_id, GValue* value, GParamSpec* pspec);

}  // namespace nccmatch::plugin::element

"""Hair strands: file formats (USC-HairSalon ``.data``, Cem Yuksel's ``.hair``) and a synthetic hairstyle generator."""
